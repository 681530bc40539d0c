"""End-to-end verification on the CPU interpreter: broken candidates fail in the right way, cheats are
caught by the check meant for them, honest candidates pass every check. Each fixture says in its
docstring what it does."""

import functools

import pytest

from diagnose.errors import UsageError
from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, verify
from tests.conftest import FIXTURES

OPTIONS = CheckOptions(device="cpu", timeout_s=60, memory_limit=2 * 2**30)


@functools.lru_cache(maxsize=None)
def verdict_of(relative: str, candidate: str | None = None, timeout_s: float = 60):
    task = load_task(FIXTURES / relative, FIXTURES / candidate if candidate else None)
    return verify(task, CheckOptions(device="cpu", timeout_s=timeout_s, memory_limit=2 * 2**30))


def failed_checks(verdict):
    return {c.name for c in verdict.checks if not c.passed}


@pytest.mark.slow
@pytest.mark.parametrize(
    "relative, candidate",
    [("cheats/honest.py", None), ("tasks/two_files/reference.py", "tasks/two_files/candidate.py")],
)
def test_honest_candidates_pass_every_check(relative, candidate):
    verdict = verdict_of(relative, candidate)
    assert verdict.passed, (verdict.failure, verdict.checks, verdict.cases)
    names = {c.name for c in verdict.checks}
    assert names == {
        "launches_triton",
        "no_reference_call",
        "input_sensitivity",
        "input_mutation",
        "ghost_replay",
        "recheck_after_timing",
        "inputs_in_turn",
    }
    # three seeds at the task's sizes, one case at sizes it did not name (N 1000 -> 1001)
    assert [c.group for c in verdict.cases] == ["default"] * 3 + ["default@N=1001"]
    assert all(c.max_abs_err == 0 for c in verdict.cases)
    assert all(t.median_ms is None and "not timed" in t.note for t in verdict.timings)


@pytest.mark.slow
@pytest.mark.parametrize(
    "fixture, check",
    [
        ("torch_only", "launches_triton"),
        ("decoy_kernel", "ghost_replay"),
        ("caches_output", "input_sensitivity"),
        ("calls_reference", "no_reference_call"),
        ("degrades_after_warmup", "recheck_after_timing"),
        ("fingerprint_cache", "recheck_after_timing"),
        ("version_cache", "recheck_after_timing"),
    ],
)
def test_each_cheat_is_caught_by_its_check(fixture, check):
    verdict = verdict_of(f"cheats/{fixture}.py")
    assert not verdict.passed
    assert check in failed_checks(verdict)


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["patches_allclose", "hunts_tensors", "empty_like_reuse", "reads_reference_files"])
def test_cheats_on_the_comparison_fail_correctness(fixture):
    # The comparison runs in the parent on tensors from files, and no reference output is ever alive in
    # the candidate's process or left on disk for it: patching torch.allclose, hunting live tensors or
    # reading the harness's files gains nothing.
    verdict = verdict_of(f"cheats/{fixture}.py")
    assert not verdict.passed
    assert not all(c.passed for c in verdict.cases), (verdict.failure, verdict.cases)


@pytest.mark.slow
@pytest.mark.parametrize(
    "fixture, reason",
    [
        ("wrong_shape", "shape"),
        ("wrong_dtype", "dtype"),
        ("wrong_values", "outside atol"),
        ("nan_output", "NaN"),
    ],
)
def test_wrong_outputs_fail_with_a_reason(fixture, reason):
    verdict = verdict_of(f"tasks/{fixture}.py")
    assert not verdict.passed and verdict.failure is None
    assert all(not c.passed and reason in c.reason for c in verdict.cases)


@pytest.mark.slow
def test_mutating_an_input_is_caught():
    verdict = verdict_of("tasks/mutates_input.py")
    assert all(c.passed for c in verdict.cases)
    assert "input_mutation" in failed_checks(verdict)


@pytest.mark.slow
def test_an_in_place_reference_is_matched_by_an_in_place_candidate():
    verdict = verdict_of("tasks/in_place_honest.py")
    assert verdict.passed, (verdict.failure, verdict.checks, verdict.cases)


@pytest.mark.slow
def test_skipping_the_references_in_place_update_is_caught():
    verdict = verdict_of("tasks/in_place_skipped.py")
    assert all(c.passed for c in verdict.cases)
    assert failed_checks(verdict) == {"input_mutation"}


@pytest.mark.slow
def test_the_verdict_says_where_the_time_went():
    steps = dict(verdict_of("cheats/honest.py").phases)
    assert {"reference", "candidate", "compare", "ghost", "total"} <= set(steps)
    assert all(seconds >= 0 for seconds in steps.values())
    assert steps["total"] >= steps["reference"] + steps["candidate"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "fixture, kind, words",
    [
        ("model_new_raises", "exception", "boom"),
        ("worker_segfaults", "crashed", "SIGSEGV"),
        ("worker_eats_memory", "out_of_memory", "cap"),
    ],
)
def test_runtime_failures_are_structured(fixture, kind, words):
    verdict = verdict_of(f"tasks/{fixture}.py")
    assert not verdict.passed
    assert verdict.failure.kind == kind
    assert words in verdict.failure.message


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["kernel_hangs", "worker_sleeps"])
def test_hangs_time_out(fixture):
    verdict = verdict_of(f"tasks/{fixture}.py", timeout_s=8)
    assert verdict.failure.kind == "timeout"


@pytest.mark.parametrize(
    "fixture, words", [("get_inputs_raises", "get_inputs"), ("import_error", "ModuleNotFoundError")]
)
def test_reference_failures_are_bad_input(fixture, words):
    with pytest.raises(UsageError, match="the reference failed") as error:
        verdict_of(f"tasks/{fixture}.py")
    assert "\n" not in str(error.value)


@pytest.mark.slow
def test_a_prepared_reference_serves_every_candidate_of_its_task(tmp_path):
    from diagnose.toolchain.placement import require
    from diagnose.verify.harness import prepared

    reference = tmp_path / "reference.py"
    reference.write_text((FIXTURES / "tasks/two_files/reference.py").read_text())
    honest, wrong = FIXTURES / "tasks/two_files/candidate.py", FIXTURES / "tasks/wrong_values.py"
    with prepared(load_task(reference, honest), OPTIONS, require("cpu")) as shared:
        first = verify(load_task(reference, honest), OPTIONS, shared)
        second = verify(load_task(reference, wrong), OPTIONS, shared)
        assert dict(first.phases)["reference (prepared)"] == 0.0 and first.passed
        assert "reference (prepared)" in dict(second.phases) and not second.passed
        assert not shared.serves(load_task(reference, honest), CheckOptions(device="cpu", seeds=(5,)))
        reference.write_text(reference.read_text() + "\n# edited\n")
        assert not shared.serves(load_task(reference, honest), OPTIONS), "an edited reference is run again"
        again = verify(load_task(reference, honest), OPTIONS, shared)
        assert "reference" in dict(again.phases) and again.passed


@pytest.mark.slow
def test_a_kept_reference_serves_a_run_until_it_no_longer_serves(tmp_path):
    from pathlib import Path

    from diagnose.verify.harness import KeptReference

    reference = tmp_path / "reference.py"
    reference.write_text((FIXTURES / "tasks/two_files/reference.py").read_text())
    honest, wrong = FIXTURES / "tasks/two_files/candidate.py", FIXTURES / "tasks/wrong_values.py"
    keep = KeptReference()
    try:
        first = verify(load_task(reference, honest), OPTIONS, keep=keep)
        assert "reference" in dict(first.phases) and first.passed, "the first verification runs the reference job"
        folder = keep.serving(load_task(reference, honest), OPTIONS).job_dir
        second = verify(load_task(reference, wrong), OPTIONS, keep=keep)
        assert dict(second.phases)["reference (prepared)"] == 0.0 and not second.passed
        other_seeds = CheckOptions(device="cpu", seeds=(5,), timeout_s=60, memory_limit=2 * 2**30)
        third = verify(load_task(reference, honest), other_seeds, keep=keep)
        assert "reference" in dict(third.phases) and third.passed, "other seeds: the reference job again"
        assert not Path(folder).exists(), "the reference it replaced is deleted"
        assert keep.serving(load_task(reference, honest), other_seeds) is not None
        folder = keep.serving(load_task(reference, honest), other_seeds).job_dir
    finally:
        keep.close()
    assert not Path(folder).exists() and keep.serving(load_task(reference, honest), other_seeds) is None
