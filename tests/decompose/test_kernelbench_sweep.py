"""The KernelBench sweep's summary (`benchmarks/decompose_kernelbench.py`, not a package: imported by
path): correctness and fast_1 over eager and torch.compile, counted over all problems swept."""

import importlib.util
import json

from tests.conftest import ROOT


def sweep_script():
    spec = importlib.util.spec_from_file_location(
        "decompose_kernelbench", ROOT / "benchmarks" / "decompose_kernelbench.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(problem, end_to_end, speedups=None, chosen=("inductor",)):
    subgraphs = [
        {
            "name": f"sg{i}",
            "ops": "relu",
            "chosen": c,
            "candidates": [["torch", "reference", 1.0, ""], ["inductor", "passed", 0.5, ""]],
        }
        for i, c in enumerate(chosen)
    ]
    return {
        "problem": problem,
        "end_to_end": end_to_end,
        "e2e_speedups": speedups or {},
        "subgraphs": subgraphs,
        "wall_s": 1.0,
    }


def test_the_sweep_summary_counts_correct_and_fast_1_over_all_problems(tmp_path, capsys):
    rows = [
        row("1_a.py", True, {"eager": 1.5, "compile": 1.2}),
        row("2_b.py", True, {"eager": 2.0, "compile": 0.8}),
        row("3_c.py", True, {"eager": 0.9, "compile": 0.5}),
        row("4_d.py", False, {}),  # a wrong composite is never fast
        row("5_e.py", None, chosen=("torch", "torch")),  # all torch: the model itself, correct, not timed
        {"problem": "6_f.py", "error": "the model does not trace", "wall_s": 0.1},
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = tmp_path / "summary.md"
    figures = dict(sweep_script().summary(results, table))
    assert figures["problems"] == "6 (errors 1)"
    assert figures["correct"].startswith("4/6 (67%)")
    assert figures["fast_1 over eager"] == "2/6 (33%)"
    assert figures["fast_1 over torch.compile"] == "1/6 (17%)"
    assert figures["speedup over eager"].startswith("n 3: min 0.90x") and "max 2.00x" in figures["speedup over eager"]
    assert figures["subgraphs"] == "6; chosen: inductor 4, torch 2"
    assert "fast_1 over torch.compile: 1/6 (17%)" in capsys.readouterr().out
    assert "| fast_1 over eager | 2/6 (33%) |" in table.read_text().splitlines()


def test_a_problem_over_its_limit_is_killed_and_its_row_says_so(tmp_path):
    """Rows must land before an outer time limit: a problem past --problem-limit gets an error row."""
    import subprocess
    import sys

    level2 = tmp_path / "level2"
    level2.mkdir()
    (level2 / "1_Slow.py").write_text(  # a model whose inputs never come in time
        "import time\nimport torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n\n"
        "def get_inputs():\n    time.sleep(60)\n    return [torch.ones(2)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "decompose_kernelbench.py"),
            str(level2),
            "--out",
            str(out),
            "--problem-limit",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    (only,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert only["problem"] == "1_Slow.py" and only["error"] == "over --problem-limit 1 s"
