"""`diagnose capture --device none` on a project written as FlagGems is: kernels behind a launcher of its
own that wants `JITFunction`s (which the interpreter's kernels are only under the CPU stand-in), kernels
defined in one module and launched from another, a device function handed to a generic kernel. The
launches are recorded and not run; `inspect` then reads every launched kernel's IR from them
(tests/fixtures/modules/wrapped)."""

import json
import shutil
import sys

import pytest

from tests.conftest import FIXTURES, run_cli

WRAPPED = FIXTURES / "modules" / "wrapped"
TESTS = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "check_wrapped.py"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    project = tmp_path_factory.mktemp("wrapped") / "project"
    shutil.copytree(WRAPPED, project)
    done = run_cli("capture", "--device", "none", "--project", str(project), "--", *TESTS)
    return project, done


@pytest.mark.slow
def test_the_interpreter_runs_it_too(tmp_path):
    """Under the CPU stand-in the interpreter's kernels are `JITFunction`s, so the launcher finds one."""
    project = tmp_path / "project"
    shutil.copytree(WRAPPED, project)
    done = run_cli("capture", "--device", "cpu", "--project", str(project), "--", *TESTS)
    assert done.returncode == 0 and "exited with 0" in done.stderr, done.stderr[-2000:]  # the project's checks pass
    records = json.loads((project / ".diagnose" / "launches" / "ops.launch.json").read_text())["launches"]
    assert {r["kernel"] for r in records} == {"row_max_kernel", "scale_kernel"}


@pytest.mark.slow
def test_launches_are_recorded_not_run(recorded):
    project, done = recorded
    assert done.returncode == 0, done.stderr
    assert "recorded, not run (no device); 3 distinct launches" in done.stderr
    assert "exited with 1" in done.stderr  # nothing ran, so the project's own checks failed
    launches = project / ".diagnose" / "launches"
    records = json.loads((launches / "ops.launch.json").read_text())["launches"]
    by_kernel = {r["kernel"]: r for r in records}
    # the launch names the project's launcher (a module global), which forwards to the autotuner: what
    # the autotuner sets is left to it, and no value range is read from an output nobody wrote
    assert (
        by_kernel["row_max_kernel"]["launch"]
        == "row_max_kernel[(8,)](x_ptr=f32[8,300], out_ptr=f32[8], n=300, stride_row=300)"
    )
    assert by_kernel["row_max_kernel"]["call"] == "row_max(x=f32[8,300])"
    assert by_kernel["scale_kernel"]["kernel_file"] == "ops/kernels.py"
    (generic,) = json.loads((launches / "ops.pointwise.json").read_text())["launches"]
    assert "FN=<JITFunction>" in generic["launch"]


@pytest.mark.slow
def test_inspect_reads_kernels_launched_from_another_module(recorded):
    project, _ = recorded
    done = run_cli("inspect", str(project / "ops" / "kernels.py"), "--json")
    assert done.returncode == 0, done.stderr
    kernels = json.loads(done.stdout)["kernels"]
    titles = [k["title"] for k in kernels]
    # one compile per autotune config, from the launch ops/launch.py made; the reduce's combine
    # function is a device function, compiled inside the kernel, never launched on its own
    assert sum(t.startswith("row_max_kernel [captured launch; BLOCK: 512") for t in titles) == 1
    assert sum(t.startswith("row_max_kernel [captured launch; BLOCK: 1024") for t in titles) == 1
    assert any(t.startswith("scale_kernel [captured launch") for t in titles)
    assert not any(k["kernel"] == "_max_combine" for k in kernels)
    assert all(k.get("evidence") for k in kernels)


@pytest.mark.slow
def test_a_kernel_that_cannot_be_launched_fails_alone(recorded):
    """The generic kernel takes a function (FN=<JITFunction>: not replayable), so its launch is guessed,
    and the guess cannot call a constexpr it takes for a flag: that kernel fails, reported as such."""
    project, _ = recorded
    done = run_cli("inspect", str(project / "ops" / "pointwise.py"), "--json")
    assert done.returncode == 1
    entry, fill = json.loads(done.stdout)["kernels"]
    assert entry["kernel"] == "_elementwise_kernel" and "guessed launch" in entry["title"]
    assert "not callable" in entry["error"]["message"]
    assert fill["kernel"] == "_fill_kernel" and fill["evidence"]  # the module's other kernel still compiles
