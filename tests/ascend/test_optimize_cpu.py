"""`diagnose optimize --target ascend:950` on a CPU-only machine, from the command line: it finishes,
verifies on the interpreter, ranks by the estimate, and says what was not possible here: nothing
timed on an NPU; Ascend IR facts where the toolchain is set up, "not available here" where not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.report.reports import validate
from diagnose.toolchain import placement
from diagnose.toolchain.config import save_record
from tests.conftest import EXAMPLES, ROOT


def start(task: Path, cache: Path) -> subprocess.Popen:
    """`diagnose optimize` on `task` with `cache` as the cache; its output goes to files beside the task."""
    with open(task.with_suffix(".out"), "w") as out, open(task.with_suffix(".err"), "w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "diagnose.cli", "optimize", "--target", "ascend:950", str(task), "--device", "cpu"],
            cwd=ROOT,
            stdout=out,
            stderr=err,
            env={**os.environ, "DIAGNOSE_CACHE_DIR": str(cache)},
        )


def finish(proc: subprocess.Popen, task: Path, cache: Path) -> tuple[str, dict]:
    proc.wait(timeout=600)
    assert proc.returncode == 0, task.with_suffix(".err").read_text()[-3000:]
    (run,) = list((cache / "runs").iterdir())
    report = json.loads((run / "report.json").read_text())
    validate(report)
    return task.with_suffix(".out").read_text(), report


@pytest.fixture(scope="module")
def runs(ascend_toolchain, tmp_path_factory) -> dict:
    """Both runs at once (they are independent; two cores finish them in the time of one), each on
    its own copy of the task: `with` a cache holding the toolchain's record, `without` an empty one
    (no toolchains.json: the Ascend toolchain is not set up there)."""
    if placement.available("npu")[0]:
        pytest.skip("an NPU is usable here: these are the CPU-only runs")
    folder = tmp_path_factory.mktemp("optimize-ascend")
    started = {}
    for name in ("with", "without"):
        task, cache = folder / name / "vector_add.py", folder / name / "cache"
        cache.mkdir(parents=True)
        task.write_text((EXAMPLES / "vector_add.py").read_text())
        if name == "with":
            save_record(ascend_toolchain, cache)
        started[name] = (start(task, cache), task, cache)
    try:
        return {name: (*finish(proc, task, cache), task) for name, (proc, task, cache) in started.items()}
    finally:
        for proc, _task, _cache in started.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def step(report: dict, level: str, action: str) -> str:
    return next(s["reason"] for s in report["trace"] if s["level"] == level and s["action"].startswith(action))


def common_checks(stdout: str, report: dict, task: Path) -> None:
    assert report["target"] == "ascend:950" and report["device"] == "cpu"
    assert report["baseline"]["passed"] and "not timed" in report["trace"][0]["reason"]
    assert all(t["median_ms"] is None for t in report["baseline"]["timings"])
    assert report["candidates"] and all(c["verdict"]["passed"] for c in report["candidates"])
    assert {c["candidate"]["made_by"][0] for c in report["candidates"]} >= {"persistent-grid", "two-level-tiling"}
    assert "nothing timed" in stdout
    assert "nothing timed on an NPU: device npu is not available here" in step(report, "profile", "roofline")
    assert task.read_text() == (EXAMPLES / "vector_add.py").read_text(), "the input is never overwritten"


@pytest.mark.slow
def test_with_the_toolchain_the_report_has_ascend_ir_facts(runs):
    stdout, report, task = runs["with"]
    common_checks(stdout, report, task)
    ir = step(report, "ir", "compile offline for ascend:950")
    assert "facts" in ir and "not available" not in ir
    names = {(e["stage"], e["name"]) for e in report["evidence"]}
    assert {("ir", "KernelMode"), ("ir", "LaunchGrid"), ("ir", "UBFootprint")} <= names
    assert ("pass", "PassIntroduced") in names, "the passes level asks the toolchain for per-pass IR"
    assert report["deepest_level"] == "passes"


def test_without_the_toolchain_the_ir_levels_say_not_available_here(runs):
    stdout, report, task = runs["without"]
    common_checks(stdout, report, task)
    for level, action in (("ir", "compile offline"), ("passes", "controlled recompiles")):
        reason = step(report, level, action)
        assert reason.startswith("not available here: ascend:950 needs the Ascend toolchain"), reason
    assert "the Ascend toolchain is not set up" in step(report, "profile", "roofline")
    assert not [e for e in report["evidence"] if e["stage"] in ("ir", "pass")]
