"""`diagnose optimize` as a first-time user meets it: a task whose own code raises is bad input (exit 2,
said first, in one line), the run id and how to resume come at the start and on Ctrl-C, and a run is
found again from another folder."""

import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from diagnose import knobs
from diagnose.cli import app
from diagnose.errors import EXIT_INTERRUPTED, EXIT_USAGE
from tests.conftest import EXAMPLES, FIXTURES, ROOT


@pytest.fixture
def user_cache(monkeypatch, tmp_path):
    """Runs go to a private user cache (no DIAGNOSE_CACHE_DIR), as they do for a user."""
    monkeypatch.delenv(knobs.CACHE_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "diagnose" / "runs"


def resume_line(run_id: str) -> str:
    return f"run {run_id}; resume it with: diagnose optimize --resume {run_id}"


@pytest.mark.slow
def test_a_task_that_raises_is_bad_input_and_its_run_resumes_from_another_folder(user_cache, monkeypatch, tmp_path):
    for name in ("here", "there"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "here")
    task = FIXTURES / "tasks" / "model_new_raises.py"
    result = CliRunner().invoke(app, ["optimize", str(task), "--quiet"])
    assert result.exit_code == EXIT_USAGE, result.stderr
    assert result.stdout == "", "no table, no outcome: the error comes first"
    first, last = result.stderr.strip().splitlines()  # quiet: the run id, then the one error line
    (run,) = [p.name for p in user_cache.iterdir()]
    assert first == resume_line(run)
    assert last.startswith(f"diagnose: error: {task}: the task as given does not run: RuntimeError: boom")
    assert last.endswith(f"(exception); nothing to optimize (run {run})")
    assert not list(task.parent.glob("model_new_raises.optimized*")), "nothing written beside the task"

    monkeypatch.chdir(tmp_path / "there")  # a run is found from any folder
    resumed = CliRunner().invoke(app, ["optimize", "--resume", run, "--quiet"])
    assert resumed.exit_code == EXIT_USAGE and resumed.stderr.strip().splitlines()[-1] == last
    report = CliRunner().invoke(app, ["report", run, "--format", "md"])
    assert report.exit_code == 0 and "boom" in report.stdout


def test_ctrl_c_prints_the_run_id_and_how_to_resume(monkeypatch):
    def interrupted(task, on_run=None, **kwargs):
        on_run("20250101-000000-abcdef")
        raise KeyboardInterrupt

    monkeypatch.setattr("diagnose.agent.run.optimize", interrupted)
    result = CliRunner().invoke(app, ["optimize", str(EXAMPLES / "vector_add.py")])
    assert result.exit_code == EXIT_INTERRUPTED
    lines = result.stderr.strip().splitlines()
    assert lines[0] == resume_line("20250101-000000-abcdef")
    assert lines[-1] == f"diagnose: interrupted; {resume_line('20250101-000000-abcdef')}"


def test_ctrl_c_that_a_library_swallows_still_interrupts_the_run(monkeypatch):
    """A library callback with `except BaseException: pass` (LangGraph's futures) can eat the
    KeyboardInterrupt; the command remembers the key and stops at the next progress callback."""
    steps = []

    def swallowing(task, on_run=None, on_step=None, **kwargs):
        on_run("20250101-000000-abcdef")
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs here
        except BaseException:  # noqa: BLE001 - the library's swallow this test is about
            pass
        on_step("triage", {"trace": []})
        steps.append("ran on")
        raise AssertionError("the run went on after Ctrl-C")

    monkeypatch.setattr("diagnose.agent.run.optimize", swallowing)
    result = CliRunner().invoke(app, ["optimize", str(EXAMPLES / "vector_add.py")])
    assert result.exit_code == EXIT_INTERRUPTED and not steps
    assert result.stderr.strip().splitlines()[-1] == f"diagnose: interrupted; {resume_line('20250101-000000-abcdef')}"


def test_ctrl_c_before_the_run_exists_says_so(monkeypatch):
    def interrupted(task, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("diagnose.agent.run.optimize", interrupted)
    result = CliRunner().invoke(app, ["optimize", str(EXAMPLES / "vector_add.py")])
    assert result.exit_code == EXIT_INTERRUPTED and "interrupted; no run was started" in result.stderr


@pytest.mark.slow
def test_sigint_mid_run_exits_130_with_the_resume_command(tmp_path):
    task = tmp_path / "vector_add.py"
    task.write_text((EXAMPLES / "vector_add.py").read_text())
    proc = subprocess.Popen(
        [sys.executable, "-m", "diagnose.cli", "optimize", str(task)],
        cwd=ROOT,
        env={**os.environ, knobs.CACHE_DIR: str(tmp_path / "cache")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stderr.readline().strip()  # at once, before the first node
        assert first.startswith("run ") and "diagnose optimize --resume" in first
        run = first.split()[1].rstrip(";")
        while "verifying the task as given: candidate" not in proc.stderr.readline():  # a worker is running
            assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED
    assert rest.strip().splitlines()[-1] == f"diagnose: interrupted; {resume_line(run)}"
    assert (tmp_path / "cache" / "runs" / run / "checkpoints.sqlite").exists()


@pytest.mark.slow
def test_a_kernel_that_does_not_compile_is_repaired_not_refused(user_cache, tmp_path):
    """A first version whose block size is a plain parameter does not run (the interpreter rejects it as
    the compiler does): the run goes on, constexpr-block-size's candidate passes against the task's
    PyTorch reference, and the patch is handed back as a repair (exit 0), nothing written over the task."""
    task = tmp_path / "l2norm.py"
    task.write_text((FIXTURES / "rewrite" / "constexpr-block-size" / "before.py").read_text())
    result = CliRunner().invoke(app, ["optimize", str(task), "--max-candidates", "2", "--quiet"])
    assert result.exit_code == 0, result.stderr
    assert "a repair: the task as given does not" in result.stdout
    assert "arange's arguments must be of type tl.constexpr" in result.stdout
    assert "constexpr-block-size" in result.stdout
    assert task.read_text() == (FIXTURES / "rewrite" / "constexpr-block-size" / "before.py").read_text()
