"""The NPU runtime path. Where torch_npu imports and sees an NPU (in the Ascend toolchain or this
Python), kernels run, are verified and are timed on the `npu` device; elsewhere the `npu` tests
are skipped with the line that says what is missing, and the status says it in one line.

The tests without the marker run everywhere: the harness's jobs run in the interpreter that the
placement names (here the toolchain's, on the interpreter), and the refusal is one line."""

from __future__ import annotations

import json

import pytest

from diagnose.runtime.runner import call
from diagnose.toolchain import placement
from diagnose.runtime.devices import Placement
from diagnose.toolchain.specs import spec_for
from diagnose.verify.harness import CheckOptions
from diagnose.verify.options import run_job
from tests.conftest import EXAMPLES, run_cli


@pytest.fixture(scope="module")
def npu(ascend_toolchain) -> Placement:
    """Where NPU jobs run here; the test is skipped, with the reason, where there is none."""
    where, why = placement.placement("npu")
    if where is None:
        pytest.skip(why)
    return where


def test_no_npu_is_said_in_one_line(ascend_toolchain):
    where, why = placement.placement("npu")
    if where is not None:
        pytest.skip("an NPU is present here")
    assert why.startswith("device npu is not available here: ") and "\n" not in why


def test_jobs_run_in_the_interpreter_the_placement_names(ascend_toolchain, tmp_path):
    """The reference job under the toolchain's Python: triton-ascend's triton, its torch."""
    where = Placement("cpu", python=ascend_toolchain.python, env=spec_for("ascend").worker_env, interpret=True)
    payload = {
        "device": "cpu",
        "job_dir": str(tmp_path),
        "reference": str(EXAMPLES / "vector_add.py"),
        "groups": None,
        "seeds": [0],
        "recheck_seed": 1009,
    }
    result = run_job("reference_job", payload, CheckOptions(timeout_s=300), where)
    assert result.ok, result.failure
    assert result.value["versions"]["triton"] == ascend_toolchain.version("triton-ascend")
    assert result.value["versions"]["torch"] == ascend_toolchain.version("torch")


@pytest.mark.npu
def test_vector_add_on_the_npu(npu):
    result = call("tests.ascend.entries:npu_vector_add", {}, timeout_s=600, **npu.runner_options())
    assert result.ok, result.failure
    assert result.value["device"].startswith("npu") and result.value["max_error"] == 0.0


@pytest.mark.npu
def test_the_timer_uses_npu_events(npu):
    result = call("tests.ascend.entries:npu_timer", {}, timeout_s=600, **npu.runner_options())
    assert result.ok, result.failure
    value = result.value
    assert "npu" in value["backend"] and value["flush_device"].startswith("npu")
    assert value["median_ms"] > 0 and value["reps"] >= 10


@pytest.mark.npu
def test_the_harness_verifies_and_times_on_the_npu(npu):
    from diagnose.task import load_task
    from diagnose.verify.harness import verify

    verdict = verify(
        load_task(EXAMPLES / "vector_add.py"),
        CheckOptions(device="npu", seeds=(0, 1), groups=("n_2e26_odd",), baselines=("eager",), timeout_s=600),
    )
    assert verdict.passed, (verdict.failure, verdict.checks, verdict.cases)
    assert verdict.device == "npu" and dict(verdict.versions)["device_name"]
    candidate, eager = verdict.timing("candidate", "n_2e26_odd"), verdict.timing("eager", "n_2e26_odd")
    assert candidate.median_ms > 0 and eager.median_ms > 0 and candidate.reps >= 10
    assert {c.name for c in verdict.checks} >= {"side_stream", "recheck_after_timing", "ghost_replay"}


@pytest.mark.npu
def test_check_on_the_npu_from_the_command_line(npu):
    result = run_cli(
        "check",
        str(EXAMPLES / "vector_add.py"),
        "--device",
        "npu",
        "--seeds",
        "1",
        "--group",
        "n_2e26_odd",
        "--no-compile",
        "--json",
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["device"] == "npu"
