"""TritonBench as its checkout ships it (thunlp/TritonBench): `data/TritonBench_G_v1` and `_T_v1` under
the root, tests that create `device='cuda'` tensors, a top-level result printed after the test call,
LLM outputs as `.jsonl` candidates, TritonBench's own call/execution accuracy and perf_G scripts.

The fixture checkout (`tests/fixtures/suites/tritonbench_checkout/`) is written in those formats."""

from __future__ import annotations

import shutil
import types
from pathlib import Path

import pytest

from diagnose.bench.suites import tritonbench, tritonbench_llm
from diagnose.bench.sweep import SweepOptions
from tests.conftest import FIXTURES

CHECKOUT = FIXTURES / "suites" / "tritonbench_checkout"
G_LINES = CHECKOUT / "LLM_generated" / "Bench_G" / "model_comp.jsonl"
T_LINES = CHECKOUT / "LLM_generated" / "Bench_T" / "model.jsonl"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))


def options(**kw) -> SweepOptions:
    return SweepOptions(suite_format="tritonbench", device="cpu", seeds=2, timeout_s=120, **kw)


def by_id(root: Path = CHECKOUT, **kw) -> dict:
    return {t.entry.id: t for t in tritonbench.load(root, options(**kw))}


def test_the_checkout_root_lists_g_and_t_only():
    tasks = by_id()
    assert sorted(tasks) == [
        "data/TritonBench_G_v1/scale",
        "data/TritonBench_G_v1/vec_add",
        "data/TritonBench_T_v1/relu",
    ]
    assert all(t.problem is None and t.solution == t.entry.path for t in tasks.values())


def test_a_printed_result_of_a_dropped_test_call_is_dropped_too():
    _, test = tritonbench.split((CHECKOUT / "data/TritonBench_G_v1/vec_add.py").read_text(), "vec_add.py")
    kept = tritonbench.without_calls(test, "vec_add.py")
    assert "def test_vec_add" in kept and "import torch" in kept
    assert "result_gold =" not in kept and "print(result_gold" not in kept
    unrelated = "def test_a():\n    return 1\nr = test_a()\nprint(r)\nLIMIT = 3\nprint(LIMIT)\n"
    assert tritonbench.without_calls(unrelated, "x.py").splitlines()[-2:] == ["LIMIT = 3", "print(LIMIT)"]


def test_g_lines_are_matched_by_their_label():
    tasks = by_id(solutions=G_LINES)
    vec, scale = tasks["data/TritonBench_G_v1/vec_add"], tasks["data/TritonBench_G_v1/scale"]
    assert vec.problem is None and vec.solution.name == "vec_add.py" and vec.solution != vec.entry.path
    code = vec.solution.read_text()
    assert "BLOCK=32" in code and "```" not in code and "It adds" not in code and "<|im_end|>" not in code
    assert scale.problem is None, "an edited label is found by the lines it shares with the original"
    assert tasks["data/TritonBench_T_v1/relu"].problem.startswith("relu.py: no solution for it in")


def test_t_lines_are_matched_by_description_or_by_the_entry_name(tmp_path):
    [relu] = [t for t in by_id(solutions=T_LINES).values() if t.entry.op == "relu"]
    assert relu.problem is None and "relu_kernel" in relu.solution.read_text()
    bare = tmp_path / "T"
    shutil.copytree(CHECKOUT / "data" / "TritonBench_T_v1", bare / "TritonBench_T_v1")
    [task] = tritonbench.load(bare / "TritonBench_T_v1", options(solutions=T_LINES))
    assert task.problem is None, "without the description file the wrapper's name decides"


def test_a_jsonl_line_without_predict_is_a_one_line_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"label": "x"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: a line has no `predict`"):
        by_id(solutions=bad)


def test_tritonbench_keeps_imports_and_functions_of_a_g_answer():
    answer = "import torch\nclass A:\n    pass\nX = 1\ndef f():\n    def g():\n        pass\n"
    kept = tritonbench_llm.tritonbench_code(answer, "G")
    assert "import torch" in kept and "def f" in kept and "def g" in kept
    assert "class A" not in kept and "X = 1" not in kept
    fenced = "text\n```python\n" + answer + "```\nprose"
    assert tritonbench_llm.tritonbench_code(fenced, "G").rstrip().endswith("prose"), "unparsable: kept as it is"
    assert tritonbench_llm.tritonbench_code(fenced, "T").startswith("\nimport torch")
    assert tritonbench_llm.extracted_code(fenced) == answer


def test_a_t_original_without_candidates_is_unsupported():
    [row] = tritonbench.score(by_id()["data/TritonBench_T_v1/relu"], options())
    assert row[1] == "failed" and row[2]["failure"]["kind"] == "unsupported"
    assert "PyTorch function" in row[2]["failure"]["message"]


def test_cuda_tests_score_on_the_cpu_with_tritonbench_verdict_beside():
    [row] = tritonbench.score(by_id()["data/TritonBench_G_v1/vec_add"], options())
    group, status, data = row
    assert (group, status) == ("test_vec_add", "passed"), data
    assert data["tritonbench"] == {"call": True, "exec": True, "stdout_empty": False, "error": None}
    assert data["perf_g"] == {"script": "vec_add_perf.py", "golden_shapes": 3, "timed": False}


def test_t_is_scored_with_an_llm_output():
    tasks = by_id(solutions=T_LINES)
    [row] = tritonbench.score(tasks["data/TritonBench_T_v1/relu"], options(solutions=T_LINES))
    assert row[:2] == ("test_relu", "passed") and row[2]["failed_checks"] == []
    # TritonBench keeps the closing fence of a T answer: its own run of this answer is a syntax error
    assert row[2]["tritonbench"]["call"] is False and row[2]["tritonbench"]["error"].startswith("SyntaxError")


def test_a_wrong_g_answer_fails_diagnose_while_tritonbench_only_sees_it_ran():
    tasks = by_id(solutions=G_LINES)
    [row] = tritonbench.score(tasks["data/TritonBench_G_v1/scale"], options(solutions=G_LINES))
    assert row[1] == "failed" and not row[2]["correct"]
    assert row[2]["tritonbench"] == {"call": True, "exec": True, "stdout_empty": True, "error": None}


def test_the_perf_script_runs_the_candidate_at_its_shapes(monkeypatch):
    import torch

    calls = []
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *args, **kwargs: self)
    module = types.ModuleType("candidate")
    module.vec_add = lambda x, y: calls.append(x.numel()) or x + y
    script = CHECKOUT / "performance_metrics/perf_G/golden_metrics/vec_add_perf.py"
    timed = tritonbench.perf_times(module, str(script), "vec_add", bench=lambda fn: (fn(), 0.5)[1])
    assert timed == {"ms": [0.5, 0.5, 0.5]} and calls == [16, 32, 64]
    broken = tritonbench.perf_times(types.ModuleType("empty"), str(script), "vec_add", bench=lambda fn: 1.0)
    assert broken["error"].startswith("ImportError") or broken["error"].startswith("AttributeError")


def test_perf_speedup_is_the_sum_of_original_over_candidate():
    results = {"original": {"perf_g": {"ms": [1.0, 3.0]}}, "candidate": {"perf_g": {"ms": [1.0, 1.0]}}}
    summary = tritonbench.perf_summary(results, Path("x_perf.py"), 2)
    assert summary["timed"] and summary["speedup"] == 2.0
