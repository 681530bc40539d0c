"""The roofline plot (PNG and SVG, with and without FLOPs, from a Verdict's timings) and the code table."""

from __future__ import annotations

import ast
from pathlib import Path

from diagnose.profiling.codes import CODES
from diagnose.profiling.plot import plot_roofline, points_from_verdict
from diagnose.profiling.roofline import Roof, Work, position
from diagnose.records import Timing, Verdict

ROOF = Roof(4.28e12, 693e12, "fp16", True)


def test_plot_points_from_a_verdict(tmp_path):
    work = [Work("m4096", 1e8, 1.37e11, "fp16")]
    verdict = Verdict(
        True,
        "cuda",
        timings=(
            Timing("candidate", "m4096", 1.062),
            Timing("initial", "m4096", 1.2),
            Timing("eager", "m4096", 0.186),
            Timing("compile", "m4096", None),
        ),
    )
    points = points_from_verdict(verdict, work, ROOF)
    assert [label for label, _ in points] == ["candidate", "initial", "eager"]  # not-timed entries are left out
    paths = plot_roofline(points, ROOF, tmp_path / "matmul.roofline", title="matmul")
    assert [Path(p).suffix for p in paths] == [".png", ".svg"]
    assert Path(paths[0]).read_bytes()[:4] == b"\x89PNG" and "<svg" in Path(paths[1]).read_text()[:400]


def test_plot_without_flops_is_a_bandwidth_roofline(tmp_path):
    w = Work("n", 8e8, 0.0, "fp32")
    points = [("candidate", position(w, ROOF, 3.2e-4)), ("eager", position(w, ROOF, 1.9e-4, "eager"))]
    (_, svg) = plot_roofline(points, ROOF, tmp_path / "add.roofline")
    assert "copy bandwidth" in Path(svg).read_text()


def test_code_table():
    assert len(CODES) == len({c.code for c in CODES.values()}) == len({c.name for c in CODES.values()})
    for code, spec in CODES.items():
        assert code == spec.code and code.startswith("PRF") and spec.title and spec.fix_title
        assert spec.severity in ("error", "warning", "info")


def test_every_code_used_is_in_the_table():
    root = Path(__file__).resolve().parents[2] / "diagnose" / "profiling"
    used = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value[:3] == "PRF"
                and node.value[3:].isdigit()
            ):
                used.add(node.value)
    assert used and used <= set(CODES), used - set(CODES)
