"""TritonBench adapter: the original's test part run against the original and a candidate, outputs compared."""

import pytest

from diagnose.bench.suites import tritonbench
from tests.bench.suites.conftest import SUITES, failure, run_sweep

SUITE = SUITES / "tritonbench" / "suite"
SOLUTIONS = SUITES / "tritonbench" / "solutions"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    return run_sweep("tritonbench", SUITE, tmp_path_factory.mktemp("tb") / "r.sqlite", solutions=SOLUTIONS)


@pytest.mark.slow
def test_candidates_are_judged_by_the_original_test(swept):
    summary, rows = swept
    assert (summary.ran, summary.failed) == (5, 4)
    [add] = rows["add"]
    assert (add.group, add.status) == ("test_add", "passed") and add.data["candidate_is_original"] is False
    [softmax] = rows["softmax"]
    assert softmax.status == "failed" and not softmax.data["correct"]
    assert softmax.data["reasons"][0].startswith("test_case_1: ")


def test_a_torch_fallback_is_caught(swept):
    [mul] = swept[1]["mul_scalar"]
    assert mul.data["correct"] and mul.status == "failed"
    assert mul.data["failed_checks"] == ["launches_triton: no Triton kernel launched (seed 0, seed 1)"]


def test_broken_files_give_one_line_errors(swept):
    rows = swept[1]
    assert failure(rows["noseparator"]) == "noseparator.py: no separator line of `#` between the code and its test"
    assert "no test_* function" in failure(rows["notest"])


@pytest.mark.slow
def test_without_solutions_the_original_runs_against_itself(tmp_path):
    summary, rows = run_sweep("tritonbench", SUITE, tmp_path / "r.sqlite", pattern="mul_scalar")
    [row] = rows["mul_scalar"]
    assert summary.failed == 0 and row.status == "passed" and row.data["candidate_is_original"]


@pytest.mark.slow
def test_originals_that_agree_with_themselves_pass(tmp_path):
    """Two idioms of TritonBench-G that a harness can make disagree with themselves. `head_scale` stores
    96 of a 128-wide head into `torch.empty_like` (the attention entries): each side's test reads new
    memory as NaN, so the unwritten quarter is NaN on both, not what each process's allocator held (on
    the H100 it differed, and seven originals failed). `numpy_kl` draws its inputs from NumPy's global
    generator and returns NumPy arrays (kldiv_triton): NumPy is seeded as torch is, and an array is
    compared as numbers, not as its printed text."""
    summary, rows = run_sweep("tritonbench", SUITES / "tritonbench" / "self_agreeing", tmp_path / "r.sqlite")
    assert {name: [r.status for r in entry] for name, entry in rows.items()} == {
        "head_scale": ["passed"],
        "numpy_kl": ["passed"],
    }, {n: e[0].data.get("reasons") for n, e in rows.items()}


def test_top_level_test_calls_are_dropped():
    source = (SUITE / "add.py").read_text()
    code, test = tritonbench.split(source, "add.py")
    assert "def add(" in code and "def test_add" not in code
    assert tritonbench.test_names(test, "add.py") == ["test_add"]
    kept = tritonbench.without_calls(test, "add.py")
    assert "result_gold" not in kept and "def test_add" in kept


def test_results_compare_by_key_and_value():
    import torch

    same = {"a": torch.ones(3), "n": "text"}
    assert tritonbench.compare(same, dict(same), {})[0]
    ok, _, reason = tritonbench.compare(same, {"a": torch.ones(3) * 2, "n": "text"}, {})
    assert not ok and reason.startswith("a: ")
    assert not tritonbench.compare(same, {"a": torch.ones(3)}, {})[0]
    near = {"a": torch.ones(3) * 1.005, "n": "text"}
    assert not tritonbench.compare(same, near, {})[0], "fp32: 1e-4 by default"
    assert tritonbench.compare(same, near, {"float32": (1e-2, 1e-2)})[0], "a profile's tolerance applies"
    assert list(tritonbench.flat({"b": [torch.ones(1), 2], "a": None})) == ["a", "b/0", "b/1"]
