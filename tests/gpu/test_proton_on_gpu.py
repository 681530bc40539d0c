"""Proton on a real CUDA device: `profile --proton` times the candidate and eager per scope."""

import pytest

from diagnose.profiling.profile import ProfileOptions, profile_task
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu


def test_proton_scopes_for_candidate_and_eager(tmp_path):
    result = profile_task(
        ROOT / "examples" / "softmax.py",
        ProfileOptions(device="cuda", proton=True, artifacts_dir=str(tmp_path), timeout_s=300),
    )
    scopes = {e.arg("scope"): e for e in result.evidence if e.source == "proton" and e.name == "ScopeTime"}
    assert any(s.startswith("candidate@") for s in scopes) and any(s.startswith("eager@") for s in scopes), result.notes
    kernels = [e for e in result.evidence if e.source == "proton" and e.name == "KernelTime"]
    assert any(k.arg("kernel") == "softmax_kernel" and k.location is not None for k in kernels)
    assert all(s.arg("achieved_bytes_per_s") > 1e11 for s in scopes.values())
    assert (tmp_path / "proton" / "proton.hatchet").exists()


def test_the_device_job_times_only_what_is_not_known():
    from diagnose.runtime.runner import call

    softmax = str(ROOT / "examples" / "softmax.py")
    payload = {"reference": softmax, "candidate": softmax, "device": "cuda", "groups": ["rows16384_cols4096_fp32"]}
    for known, timed in (([], {"candidate", "eager"}), ([["candidate", "rows16384_cols4096_fp32"]], {"eager"})):
        result = call("diagnose.profiling.jobs:device_job", {**payload, "known": known}, timeout_s=300)
        assert result.ok, result.failure
        assert {t["variant"] for t in result.value["timings"]} == timed
        assert result.value["work"][0]["bytes"] == 2 * 16384 * 4096 * 4
