"""The timing workers (`diagnose/verify/timing_jobs.py`) run end to end on the CPU, timed by the host's
clock instead of a device's events: what the GPU tests measure for real, the structure checked here.

Each job runs in a fresh interpreter as a worker would, with `events` answering a stand-in whose events
read `time.perf_counter` (the one thing a CPU lacks) and a small L2 flush buffer; the jobs' payloads come
from a real prepared reference. A candidate that sleeps in the eager path once it is built
(`slows_baselines`) leaves its baselines as they are, because they are timed where it never runs."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, prepared
from diagnose.verify.judge import compare_held
from diagnose.verify.timing_jobs import baseline_files, timing_files
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent("""
    import json, sys, time
    from diagnose.verify import timing, timing_jobs

    class Event:
        def __init__(self, enable_timing=True):
            self.at = None

        def record(self):
            self.at = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.at - self.at) * 1e3

    class Stream:
        def query(self):
            return True

    STREAM = Stream()

    class HostClock:  # torch.cuda's events, synchronize and current_stream, on the host's clock
        Event = Event

        @staticmethod
        def synchronize():
            pass

        @staticmethod
        def current_stream():
            return STREAM

    timing_jobs.events = lambda device: HostClock
    timing.L2_FLUSH_MIN = 4096
    timing.BUDGET_S = 0.5
    if len(sys.argv) > 3 and sys.argv[3] == "last":  # the timed re-check drawn as late as it can be
        class Last:
            @staticmethod
            def randbelow(n):
                return n - 1

        timing_jobs.secrets = Last
    job, payload = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(getattr(timing_jobs, job)(payload)))
""")


def run_job(job: str, payload: dict, *options: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, job, json.dumps(payload), *options],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def medians(result: dict) -> dict[str, float]:
    return {t["variant"]: t["median_ms"] for t in result["timings"]}


def test_baselines_are_timed_where_the_candidate_never_runs(tmp_path):
    task = load_task(FIXTURES / "cheats" / "slows_baselines.py")
    options = CheckOptions(device="cpu", seeds=(0,))
    with prepared(task, options) as reference:
        inputs = reference.inputs_of(0)
        common = {
            "device": "cpu",
            "job_dir": reference.job_dir,
            "out_dir": str(tmp_path),
            "device_lock": None,
            "groups": reference.value["selected"],
            "inputs": inputs,
        }
        with reference.vault.ticket(baseline_files(inputs)) as ticket:
            baselines = run_job(
                "baseline_timing_job",
                {
                    **common,
                    **ticket.payload,
                    "reference": str(task.reference_path),
                    "initial": None,
                    "baselines": ["eager"],
                },
            )
        assert ticket.served == ticket.names, "the ticket names what the job fetches, no more"
        with reference.vault.ticket(timing_files(inputs, reference.spare, 0)) as ticket:
            candidate = run_job(
                "timing_job",
                {
                    **common,
                    **ticket.payload,
                    "candidate": str(task.candidate_path),
                    "seed": 0,
                    "recheck": reference.spare,
                },
            )
        assert not ticket.refused and ticket.served == ticket.names
    # The candidate sleeps 5 ms in every eager call once built; a 1000-element add takes microseconds.
    assert 0 < medians(baselines)["eager"] < 1.0, baselines
    assert set(medians(baselines)) == {"eager"} and set(medians(candidate)) == {"candidate"}
    assert candidate["escaped_calls"] == {"default": 0}
    assert candidate["recheck_outputs"]  # the re-check ran on the timed buffers


def test_variants_are_timed_side_by_side_on_inputs_from_the_vault(tmp_path):
    task = load_task(FIXTURES / "cheats" / "honest.py")
    with prepared(task, CheckOptions(device="cpu", seeds=(0,))) as reference:
        inputs = reference.inputs_of(0)
        with reference.vault.ticket(baseline_files(inputs)) as ticket:
            result = run_job(
                "side_by_side_job",
                {
                    "device": "cpu",
                    "job_dir": reference.job_dir,
                    "device_lock": None,
                    **ticket.payload,
                    "variants": {"a": str(task.candidate_path), "b": str(task.candidate_path)},
                    "groups": reference.value["selected"],
                    "inputs": inputs,
                },
            )
        assert not ticket.refused and ticket.served == ticket.names
    assert set(medians(result)) == {"a", "b"} and all(m > 0 for m in medians(result).values())


def timing_job_with_rechecks(name: str, tmp_path, *options: str) -> tuple:
    """The timing job's two re-checks of fixture `name`, judged as the parent judges them: the timed
    call that ran on the re-check's inputs, then the call after the loop."""
    task = load_task(FIXTURES / "cheats" / f"{name}.py")
    with prepared(task, CheckOptions(device="cpu", seeds=(0,))) as reference:
        inputs = reference.inputs_of(0)
        with reference.vault.ticket(timing_files(inputs, reference.spare, 0)) as ticket:
            result = run_job(
                "timing_job",
                {
                    "device": "cpu",
                    "job_dir": reference.job_dir,
                    "out_dir": str(tmp_path),
                    "device_lock": None,
                    **ticket.payload,
                    "groups": reference.value["selected"],
                    "inputs": inputs,
                    "candidate": str(task.candidate_path),
                    "seed": 0,
                    "recheck": reference.spare,
                },
                *options,
            )
        assert not ticket.refused and ticket.served == ticket.names
        in_timing = compare_held(reference.spare, reference.held, result["timed_recheck_outputs"], {}, unwritten=True)
        after = compare_held(reference.spare, reference.held, result["recheck_outputs"], {})
    return in_timing, after


def test_a_candidate_that_does_no_work_when_timed_is_wrong_in_a_timed_call(tmp_path):
    in_timing, after = timing_job_with_rechecks("skips_timed_calls", tmp_path)
    assert after.passed  # judged after the loop it computes: that re-check alone let it through
    assert not in_timing.passed, "the timed call on the re-check's inputs returned the stale output"


@pytest.mark.parametrize("name", ["honest", "honest_partial_rows"])
def test_an_honest_candidate_is_right_in_the_timed_recheck(name, tmp_path):
    """`honest_partial_rows` leaves a quarter of its output unwritten, as the reference's own kernel does.
    After the timed calls the allocator hands back memory holding their numbers where the reference holds
    NaN: the re-check after the loop reads new memory as NaN as the reference did, and in the timed call
    (where new memory is not filled) the reference's NaN is not judged."""
    in_timing, after = timing_job_with_rechecks(name, tmp_path)
    assert in_timing.passed and after.passed, (in_timing.reason, after.reason)


def test_a_candidate_that_stops_working_after_the_first_round_is_judged_later(tmp_path):
    """The re-check drawn as the last of `RECHECK_WITHIN` timed calls: the loop goes on until it fires
    (the medians settle after one round here), and the candidate, honest for its first ten timed calls
    only, is stale there."""
    in_timing, after = timing_job_with_rechecks("stops_after_first_round", tmp_path, "last")
    assert after.passed
    assert not in_timing.passed
