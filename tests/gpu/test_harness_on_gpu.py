"""The harness on a real CUDA device: honest candidates are timed beside their baselines, cheats are
caught, including the ones that only a device allows (side streams, reused freed memory)."""

import dataclasses
import functools

import pytest

from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, prepared, verify
from tests.conftest import FIXTURES

pytestmark = pytest.mark.gpu


@functools.lru_cache(maxsize=None)
def verdict_of(fixture: str):
    return verify(
        load_task(FIXTURES / "cheats" / f"{fixture}.py"),
        CheckOptions(device="cuda", seeds=(0, 1, 2), timeout_s=300, baselines=("eager",)),
    )


def test_honest_is_timed_with_baselines():
    verdict = verdict_of("honest")
    assert verdict.passed, (verdict.failure, verdict.checks, verdict.cases)
    candidate = verdict.timing("candidate", "default")
    eager = verdict.timing("eager", "default")
    assert candidate.median_ms > 0 and eager.median_ms > 0 and candidate.reps >= 10
    assert {c.name for c in verdict.checks} >= {"side_stream", "recheck_after_timing", "ghost_replay"}


def test_a_kernel_replayed_from_a_cuda_graph_is_honest():
    verdict = verdict_of("honest_cuda_graph")
    assert verdict.passed, (verdict.failure, verdict.checks, verdict.cases)


def test_side_stream_work_the_timed_stream_waits_for_is_honest():
    verdict = verdict_of("honest_two_streams")
    assert verdict.passed, (verdict.failure, verdict.checks)
    assert any(c.name == "side_stream" and c.passed for c in verdict.checks)


@pytest.mark.parametrize(
    "fixture, check",
    [
        ("torch_only", "launches_triton"),
        ("decoy_kernel", "ghost_replay"),
        ("caches_output", "input_sensitivity"),
        ("calls_reference", "no_reference_call"),
        ("degrades_after_warmup", "recheck_after_timing"),
        ("fingerprint_cache", "recheck_after_timing"),  # timed on cached outputs, stale after the in-place change
        # On the device the caching allocator may hand the next case's inputs the block the last case's had,
        # at version 0, and Python the same object ids: the cache then answers a check case already (no
        # launch, a stale output), and a candidate failing its cases is never timed. Which case hits depends
        # on the allocator (an H100 run of 2026-12-06 failed launches_triton, the next did not): any of the
        # checks that see it will do. On the CPU it reaches the re-check after the soak
        # (tests/foundation/test_verification.py).
        ("version_cache", {"launches_triton", "input_sensitivity", "recheck_after_timing", "correctness"}),
        ("side_stream", "side_stream"),
        ("skips_timed_calls", "recheck_in_timing"),  # no work when called from the timing loop
    ],
)
def test_cheats_are_caught_on_the_device(fixture, check):
    verdict = verdict_of(fixture)
    assert not verdict.passed
    caught = {c.name for c in verdict.checks if not c.passed} | (
        {"correctness"} if not all(c.passed for c in verdict.cases) else set()
    )
    assert ({check} if isinstance(check, str) else check) & caught, (verdict.checks, verdict.cases)


def test_events_patched_by_the_candidate_fail_its_timing():
    verdict = verdict_of("patches_cuda_event")
    assert not verdict.passed and all(c.passed for c in verdict.cases)
    failed = {c.name: c.detail for c in verdict.checks if not c.passed}
    assert "replaced Event.elapsed_time" in failed.get("recheck_after_timing", ""), failed


def test_a_candidate_cannot_slow_down_its_baselines():
    # It sleeps 5 ms in the eager path once built; a 1000-element add takes microseconds.
    verdict = verdict_of("slows_baselines")
    assert verdict.passed, (verdict.failure, verdict.checks)
    eager = verdict.timing("eager", "default")
    assert 0 < eager.median_ms < 1.0, eager


def test_baselines_are_timed_once_per_prepared_reference():
    # As an optimize run verifies: the task as given (no initial kernel), then candidates against it.
    task = load_task(FIXTURES / "cheats" / "honest.py")
    options = CheckOptions(device="cuda", seeds=(0,), timeout_s=300, baselines=("eager",))
    against_initial = dataclasses.replace(options, initial=task.candidate_path)
    with prepared(task, options) as reference:
        first = verify(task, options, reference)
        second, third = verify(task, against_initial, reference), verify(task, against_initial, reference)
    assert first.passed and second.passed and third.passed
    assert len(reference.baseline_timings) == 2  # eager, then the initial kernel: each timed once
    assert first.timing("eager", "default") == second.timing("eager", "default") == third.timing("eager", "default")
    assert second.timing("initial", "default") == third.timing("initial", "default")
    assert first.timing("initial", "default") is None


@pytest.mark.parametrize("fixture", ["patches_allclose", "hunts_tensors", "empty_like_reuse"])
def test_memory_and_comparison_cheats_fail_correctness(fixture):
    verdict = verdict_of(fixture)
    assert not verdict.passed and not all(c.passed for c in verdict.cases)


@pytest.mark.parametrize("fixture", ["reads_inputs_ahead", "fetches_inputs_ahead"])
def test_no_case_is_read_or_fetched_ahead(fixture):
    # On a device the answers read ahead would make every timed call free; the vault leaves none to read.
    verdict = verdict_of(fixture)
    assert not verdict.passed


@pytest.mark.parametrize(
    "fixture, kind", [("gpu_illegal_access", "cuda_error"), ("gpu_out_of_memory", "out_of_memory")]
)
def test_device_faults_are_structured_failures(fixture, kind):
    verdict = verify(
        load_task(FIXTURES / "tasks" / f"{fixture}.py"),
        CheckOptions(device="cuda", timeout_s=300, baselines=("eager",)),
    )
    assert not verdict.passed
    assert verdict.failure is not None and verdict.failure.kind == kind, verdict.failure


def test_a_round_of_candidates_verified_at_once_shares_the_device_and_its_baselines(tmp_path):
    # As an optimize round verifies on a device (`diagnose/verify/rounds.py`): at once, under one device lock.
    from diagnose.verify.reference import KeptReference
    from diagnose.verify.rounds import verify_round

    honest = FIXTURES / "cheats" / "honest.py"
    tasks = [load_task(honest, FIXTURES / "cheats" / f"{name}.py") for name in ("honest", "decoy_kernel", "honest")]
    options = CheckOptions(device="cuda", seeds=(0, 1), timeout_s=300, baselines=("eager",), initial=honest)
    keep = KeptReference()
    try:
        verdicts = verify_round(tasks, options, keep, tmp_path)
    finally:
        keep.close()
    assert [v.passed for v in verdicts] == [True, False, True], [v.checks for v in verdicts]
    assert any(c.name == "ghost_replay" and not c.passed for c in verdicts[1].checks)
    assert (tmp_path / "device.lock").exists()
    assert verdicts[0].timing("eager", "default") == verdicts[2].timing("eager", "default")  # timed once
    assert verdicts[0].timing("initial", "default") == verdicts[2].timing("initial", "default")
