"""The Nsight Compute driver end to end on CPU, with a stand-in `ncu` (tests/fixtures/profiling/ncu/
fake_ncu.py) that checks its flags and answers with the pages of the real H200 run of the softmax
example: the offline compile made here gives the SASS line map, the stand-in's source page is joined
to it, and the raw page becomes counters."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from diagnose.profiling import profile
from diagnose.profiling.nvidia import ncu_run
from tests.conftest import EXAMPLES
from tests.profiling.conftest import NCU


def test_profile_command_line(tmp_path):
    cmd = ncu_run.profile_command("ncu", ["softmax_kernel"], tmp_path / "report", tmp_path / "req", tmp_path / "res")
    assert cmd[:3] == ["ncu", "--clock-control", "none"]
    assert "--profile-from-start" in cmd and cmd[cmd.index("--profile-from-start") + 1] == "off"
    sections = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"]
    assert sections == list(ncu_run.SECTIONS)
    assert "regex:^(softmax_kernel)$" in cmd
    assert cmd[-5:-2] == [sys.executable, "-m", "diagnose.runtime.worker"]


@pytest.mark.slow
def test_ncu_path_with_a_stand_in(tmp_path, monkeypatch):
    monkeypatch.setenv(ncu_run.NCU_ENV, str(NCU / "fake_ncu.py"))
    task = str(EXAMPLES / "softmax.py")
    common = {"reference": task, "candidate": task, "groups": ["rows16384_cols4096_fp32"], "cache_root": None}
    options = profile.ProfileOptions(ncu=True)
    notes: list[str] = []
    from diagnose.profiling.ceilings import nominal
    from diagnose.targets import lookup

    target = lookup("cuda:sm90")
    kernels, _, sass = profile._static(profile._static_job(common, target, options), target, nominal(target), notes)
    assert sass[("rows16384_cols4096_fp32", "softmax_kernel")], notes
    counters, evidence, lines = profile._ncu(common, "rows16384_cols4096_fp32", kernels, sass, tmp_path, options, notes)
    assert not [n for n in notes if "ncu" in n], notes
    args = json.loads(Path(tmp_path / "ncu" / "report.args.json").read_text())
    assert args[args.index("--clock-control") + 1] == "none"
    (c,) = counters
    assert c.kernel == "softmax_kernel" and c.occupancy_limiter == "registers"
    assert abs(c.duration_s - 201.44e-6) < 1e-12 and abs(c.dram_bytes - 3231167593328.04 * 201.44e-6) < 1e3
    names = {e.name for e in evidence}
    assert {"DramThroughput", "AchievedOccupancy", "WarpStalls", "UncoalescedGlobalAccess"} <= names
    hot = [e for e in lines if e.name == "StallHotspot"]
    assert [e.location.line for e in hot[:2]] == [51, 36] and hot[0].arg("join") == "offset"
    assert all(e.location.path == task for e in hot) and hot[0].arg("top_stall") == "long_sb"
    assert not any(e.name == "UncoalescedLine" for e in lines)  # the softmax's accesses are coalesced
    assert (tmp_path / "ncu" / "ncu_raw.csv").exists() and (tmp_path / "ncu" / "ncu.log").exists()
