"""A kernel module behind a launcher of the project's own, as FlagGems writes them (`LibEntry`): the
launcher unwraps `autotune`/`heuristics` objects down to the `JITFunction`, reads its parameters, and
launches again the kernel a first launch returned. On the CPU the interpreter runs it like any module:
the original code is the reference, and the checks that count and skip launches see every launch,
the ones the launcher makes from its kept kernels included (tests/fixtures/modules/launcher)."""

import json
import shutil
import sys

import pytest

from tests.conftest import FIXTURES, run_cli

LAUNCHER = FIXTURES / "modules" / "launcher"
CALLS = ["rms_norm(x=f32[6,96], w=f32[96], eps=1e-06)", "scale_twice(x=f32[1000], factor=3.0)"]


@pytest.mark.slow
@pytest.mark.parametrize("call", CALLS)
def test_check_passes_against_the_modules_own_code(tmp_path, call):
    done = run_cli(
        "check",
        str(LAUNCHER / "gems" / "norm.py"),
        "--call",
        call,
        "--seeds",
        "2",
        "--json",
        "-q",
        env={"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    verdict = json.loads(done.stdout)["candidates"][0]["verdict"]
    checks = {c["name"]: c["passed"] for c in verdict["checks"]}
    assert verdict["passed"] and checks["launches_triton"] and checks["ghost_replay"], checks


@pytest.mark.slow
def test_the_projects_tests_run_in_the_interpreter_and_their_launches_are_captured(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(LAUNCHER, project)
    done = run_cli(
        "capture",
        "--device",
        "cpu",
        "--project",
        str(project),
        "--",
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "check_norm.py",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = json.loads((project / ".diagnose" / "launches" / "gems.norm.json").read_text())["launches"]
    assert {r["kernel"] for r in records} == {"rms_norm_kernel", "scale_kernel"}
    assert {r["call"] for r in records} == {
        "rms_norm(x=f32[6,96], w=f32[96], eps=1e-06)",
        "scale_twice(x=f32[1000], factor=3.0)",
    }
