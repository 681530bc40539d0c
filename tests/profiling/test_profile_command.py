"""`profile_command` end to end: the no-device path (one line, then the static estimate), the timed
path with a stand-in for the device worker and for ncu, the plot and JSON artefacts, usage errors."""

from __future__ import annotations

import json

import pytest

from diagnose.errors import UsageError
from diagnose.profiling import profile
from diagnose.profiling.cli import profile_command
from diagnose.profiling.nvidia import ncu_run
from tests.conftest import EXAMPLES
from tests.profiling.conftest import NCU

SOFTMAX = str(EXAMPLES / "softmax.py")
GROUP = "rows16384_cols4096_fp32"
CEILINGS = {
    "device": "NVIDIA H200",
    "copy_bytes_per_s": 4.28e12,
    "matmul_flops_per_s": [["bf16", 7.2e14], ["fp16", 7.0e14], ["tf32", 3.7e14], ["fp32", 5e13]],
    "launch_overhead_s": 5e-6,
    "measured": True,
    "source": "measured: stand-in",
    "identity": [],
}


@pytest.mark.slow
def test_no_device_says_so_in_one_line_and_shows_the_estimate(tmp_path):
    code, text = profile_command(
        str(EXAMPLES / "vector_add.py"), device="cuda", plot_dir=str(tmp_path), groups=["n_2e26_odd"]
    )
    assert code == 0
    first, *rest = text.splitlines()
    assert first.startswith("no device:") and "static estimate for cuda:sm90" in first and "an estimate" in first
    body = "\n".join(rest)
    assert "estimate   add_kernel" in body and "static estimate" in body
    assert "class      PRF" in body and "low confidence" in body
    assert (tmp_path / "vector_add.roofline.png").stat().st_size > 0 and (tmp_path / "vector_add.roofline.svg").exists()
    saved = json.loads((tmp_path / "vector_add.profile.json").read_text())
    assert saved["timed"] is False and saved["ceilings"]["measured"] is False


@pytest.mark.slow
def test_json_format(tmp_path):
    _, text = profile_command(str(EXAMPLES / "matmul.py"), device="cpu", fmt="json", groups=["m4096_n4096_k4096_fp16"])
    data = json.loads(text)
    assert data["schema"] == "diagnose.profile/1" and data["timed"] is False
    (work,) = data["work"]
    assert work["flops"] == 2 * 4096**3 and work["flops_source"] == "FlopCounterMode"
    assert work["bytes"] == 3 * 4096 * 4096 * 2
    ((_, findings),) = data["findings"]
    assert findings[0]["code"] == "PRF301" and findings[1]["evidence"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"fmt": "yaml"}, "unknown format"),
        ({"target": "cuda:sm75"}, "unknown target"),
        ({"device": "tpu"}, "unknown device"),
        ({"device": "cpu", "ncu": True}, "--ncu needs --device cuda"),
        ({"baselines": ("inductor",)}, "unknown baseline"),
    ],
)
def test_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        profile_command(SOFTMAX, **kwargs)


def test_missing_file():
    with pytest.raises(UsageError, match="no such file"):
        profile_command("/nonexistent/task.py", device="cpu")


@pytest.mark.slow
def test_timed_path_with_stand_ins(tmp_path, monkeypatch):
    """The parent's device branch: a stand-in device worker (what the H200 returns) and a stand-in ncu."""
    from diagnose.toolchain import placement

    monkeypatch.setattr(placement, "available", lambda device: (True, ""))
    monkeypatch.setenv(ncu_run.NCU_ENV, str(NCU / "fake_ncu.py"))
    real_call = profile._call

    def call(entry, payload, options, interpret=False, device=None):
        if entry != "device_job":
            return real_call(entry, payload, options, interpret)
        return {
            "groups": [GROUP],
            "notes": [],
            "ceilings": CEILINGS,
            "ceilings_from_cache": True,
            "versions": {"device_name": "NVIDIA H200", "capability": "9.0"},
            "work": [
                {
                    "group": GROUP,
                    "bytes": 2 * 16384 * 4096 * 4,
                    "flops": 0.0,
                    "dtype": "fp32",
                    "bytes_source": "inputs+outputs",
                    "flops_source": "none",
                }
            ],
            "timings": [
                {"variant": v, "group": GROUP, "median_ms": ms, "reps": 30, "stable": True}
                for v, ms in (("candidate", 0.202), ("eager", 0.2116))
            ],
        }

    monkeypatch.setattr(profile, "_call", call)
    code, text = profile_command(SOFTMAX, device="cuda", ncu=True, plot_dir=str(tmp_path), groups=[GROUP])
    assert code == 0 and not text.startswith("no device")
    assert "roofline   candidate" in text and "62.1% of roofline" in text
    assert "class      PRF001" in text and "high confidence" in text
    assert "StallHotspot" in text and "ceilings from the cache" in text and "softmax.py:51" in text
    saved = json.loads((tmp_path / "softmax.profile.json").read_text())
    assert saved["timed"] and saved["counters"][0]["kernel"] == "softmax_kernel"
    assert (tmp_path / "softmax.roofline.png").exists() and (tmp_path / "ncu" / "ncu_raw.csv").exists()


@pytest.mark.slow
def test_timings_of_the_files_own_verification_are_not_taken_again(monkeypatch):
    """The agent profiles a file it has just verified: the device job is told which (variant, group)
    pairs are timed already, and the roofline places the candidate at the timing it was given."""
    from diagnose.records import Timing
    from diagnose.toolchain import placement

    monkeypatch.setattr(placement, "available", lambda device: (True, ""))
    real_call, asked = profile._call, []

    def call(entry, payload, options, interpret=False, device=None):
        if entry != "device_job":
            return real_call(entry, payload, options, interpret)
        asked.append(payload["known"])
        work = {"group": GROUP, "bytes": 2 * 16384 * 4096 * 4, "flops": 0.0, "dtype": "fp32"}
        eager = {"variant": "eager", "group": GROUP, "median_ms": 0.25, "reps": 30, "stable": True}
        return {
            "groups": [GROUP],
            "notes": [],
            "ceilings": CEILINGS,
            "versions": {"capability": "9.0"},
            "work": [{**work, "bytes_source": "inputs+outputs", "flops_source": "none"}],
            "timings": [eager],
        }

    monkeypatch.setattr(profile, "_call", call)
    known = (Timing("candidate", GROUP, 0.2), Timing("compile", GROUP, note="not timed: no device"))
    result = profile.profile_task(SOFTMAX, profile.ProfileOptions(target="cuda:sm90", groups=(GROUP,), timings=known))
    assert asked == [[("candidate", GROUP)]]  # an untimed entry is not known: the device job times it
    assert {(t.variant, t.median_ms) for t in result.timings} == {("candidate", 0.2), ("eager", 0.25)}
    (candidate,) = [p for p in result.positions if p.variant == "candidate"]
    assert candidate.fraction == pytest.approx(2 * 16384 * 4096 * 4 / 4.28e12 / 0.2e-3, rel=1e-3)
