"""What every command of the command line does alike: the same failure gets the same exit code and one
line on stderr; option values and output paths are checked before any worker runs; `--timeout` bounds
every worker; global options go before or after the command; runs are found from any folder."""

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from diagnose import knobs
from diagnose.cli import app
from diagnose.errors import EXIT_USAGE
from tests.conftest import FIXTURES, ROOT

# Each command that runs the user's code, as a user would call it on a task file (profile on the CPU,
# where it needs no GPU; rewrite --list, which compiles the file without a rewrite to apply).
COMMANDS = {
    "check": lambda task: ["check", task],
    "optimize": lambda task: ["optimize", task, "--max-candidates", "1"],
    "inspect": lambda task: ["inspect", task],
    "profile": lambda task: ["profile", task, "--device", "cpu"],
    "rewrite": lambda task: ["rewrite", task, "--list"],
    "decompose": lambda task: ["decompose", task, "--out", tempfile.mkdtemp(prefix="diagnose-decompose-")],
}
# The same failure, for every command: (task file, extra options, words of the one error line).
FAILURES = {
    "missing file": ("missing.py", [], "no such file"),
    "syntax error": (str(FIXTURES / "tasks" / "syntax_error.py"), [], "syntax error"),
    "bad option value": (str(FIXTURES / "tasks" / "get_inputs_raises.py"), ["--timeout", "-1"], "'--timeout'"),
    "reference raises": (str(FIXTURES / "tasks" / "get_inputs_raises.py"), [], "get_inputs failed on purpose"),
}


@pytest.fixture
def invoke(monkeypatch, tmp_path):
    """Run `diagnose ...` in this process, with a private cache; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv(knobs.CACHE_DIR, str(tmp_path / "cache"))

    def run(*args: str):
        result = CliRunner().invoke(app, list(args))
        return result.exit_code, result.stdout, result.stderr

    return run


@pytest.fixture
def no_workers(monkeypatch):
    """Fail the test if any worker process is started."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a worker was started: {args[0] if args else kwargs}")

    monkeypatch.setattr("diagnose.runtime.runner.subprocess.Popen", refuse)


def the_error_line(stderr: str) -> str:
    """The one error line, which must be the last (progress lines may come before it)."""
    errors = [line for line in stderr.splitlines() if line.startswith("diagnose:")]
    assert len(errors) == 1, stderr
    assert stderr.strip().splitlines()[-1] == errors[0], stderr
    assert "Traceback" not in stderr
    return errors[0]


@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize("command", COMMANDS)
def test_the_same_failure_gets_the_same_code_from_every_command(invoke, command, failure):
    task, options, words = FAILURES[failure]
    code, stdout, stderr = invoke(*COMMANDS[command](task), *options)
    assert code == EXIT_USAGE, (stdout, stderr)
    assert words in the_error_line(stderr)


@pytest.mark.parametrize(
    "args, option",
    [
        (["optimize", "task.py", "--max-wall", "0"], "--max-wall"),
        (["optimize", "task.py", "--max-candidates", "0"], "--max-candidates"),
        (["optimize", "task.py", "--timeout", "0"], "--timeout"),
        (["check", "task.py", "--memory-limit", "0"], "--memory-limit"),
        (["check", "task.py", "--memory-limit", "-2"], "--memory-limit"),
        (["check", "task.py", "--timeout", "-5"], "--timeout"),
        (["inspect", "task.py", "--timeout", "-1"], "--timeout"),
        (["profile", "task.py", "--timeout", "-1"], "--timeout"),
        (["rewrite", "task.py", "--timeout", "-1"], "--timeout"),
        (["bench", "suite", "--max-wall", "0"], "--max-wall"),
        (["bench", "suite", "--timeout", "0"], "--timeout"),
    ],
)
def test_bad_option_values_are_usage_errors_naming_the_option(invoke, no_workers, args, option):
    code, stdout, stderr = invoke(*args)
    assert code == EXIT_USAGE
    line = the_error_line(stderr)
    assert f"'{option}'" in line and "reference" not in line


def test_click_usage_errors_are_one_line_too(invoke):
    code, _, stderr = invoke("check")
    assert code == EXIT_USAGE and "Missing argument" in the_error_line(stderr)


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_timeout_bounds_a_file_that_never_finishes_importing(invoke, command):
    start = time.monotonic()
    code, stdout, stderr = invoke(*COMMANDS[command](str(FIXTURES / "tasks" / "loops_at_import.py")), "--timeout", "2")
    assert time.monotonic() - start < 9, "one worker, stopped at 2 s"
    assert code == EXIT_USAGE, (stdout, stderr)
    assert "did not finish within 2 s (--timeout)" in the_error_line(stderr)


@pytest.mark.slow
def test_inspect_takes_its_default_timeout_from_the_ir_variable_and_the_option_wins(invoke, monkeypatch):
    task = str(FIXTURES / "tasks" / "loops_at_import.py")
    monkeypatch.setenv(knobs.IR_TIMEOUT, "1")
    start = time.monotonic()
    code, _, stderr = invoke("inspect", task)
    assert code == EXIT_USAGE and "within 1 s" in the_error_line(stderr) and time.monotonic() - start < 6
    monkeypatch.setenv(knobs.IR_TIMEOUT, "600")
    code, _, stderr = invoke("inspect", task, "--timeout", "1.5")
    assert code == EXIT_USAGE and "within 1.5 s" in the_error_line(stderr)
    assert knobs.TIMEOUT not in os.environ, "the option lasts one command"


def test_check_out_is_checked_before_any_worker(invoke, no_workers, tmp_path):
    task = str(FIXTURES / "cheats" / "honest.py")
    code, _, stderr = invoke("check", task, "--out", str(tmp_path))
    assert code == EXIT_USAGE and "is a folder" in the_error_line(stderr)
    code, _, stderr = invoke("check", task, "--out", str(tmp_path / "no" / "such" / "report.json"))
    assert code == EXIT_USAGE and "does not exist" in the_error_line(stderr)


def test_an_unwritable_out_folder_is_a_usage_error(invoke, no_workers):
    from diagnose.outputs import can_write_in

    if can_write_in(Path("/sys")):
        pytest.skip("/sys is writable here")
    code, _, stderr = invoke("check", str(FIXTURES / "cheats" / "honest.py"), "--out", "/sys/report.json")
    assert code == EXIT_USAGE and "cannot write in /sys" in the_error_line(stderr)


def test_bench_out_is_checked_first(invoke, no_workers, tmp_path):
    code, _, stderr = invoke("bench", "report", "--out", str(tmp_path), "--store", str(tmp_path / "none.sqlite"))
    assert code == EXIT_USAGE and "--out" in the_error_line(stderr) and "is a folder" in stderr


def test_optimize_checks_where_the_optimized_task_goes_before_any_worker(invoke, no_workers, monkeypatch, tmp_path):
    task = tmp_path / "kernels" / "vector_add.py"
    task.parent.mkdir()
    task.write_text((ROOT / "examples" / "vector_add.py").read_text())
    monkeypatch.setattr("diagnose.outputs.can_write_in", lambda folder: Path(folder) != task.parent)
    code, _, stderr = invoke("optimize", str(task))
    assert code == EXIT_USAGE
    assert f"vector_add.optimized.py: cannot write in {task.parent}" in the_error_line(stderr)
    assert not (tmp_path / "cache" / "runs").exists() or not list((tmp_path / "cache" / "runs").iterdir())


@pytest.mark.parametrize(
    "args", [["--debug", "check", "missing.py"], ["check", "missing.py", "--debug"], ["check", "--debug", "missing.py"]]
)
def test_debug_goes_before_or_after_the_command(args):
    result = CliRunner().invoke(app, args)
    assert type(result.exception).__name__ == "UsageError", "raised, for the traceback, not turned into one line"


def test_debug_after_the_command_shows_the_traceback(cli):
    result = cli("check", "missing.py", "--debug")
    assert result.returncode != 0 and "Traceback" in result.stderr


def fake_run(root: Path, run_id: str) -> Path:
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps({"run": run_id}))
    return folder


def test_report_finds_a_run_from_any_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(knobs.CACHE_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    made_here = tmp_path / "project"
    made_here.mkdir()
    monkeypatch.chdir(made_here)
    fake_run(knobs.runs_root(), "20250101-000000-aaaaaa")
    fake_run(made_here / ".diagnose_cache" / "runs", "20240101-000000-bbbbbb")  # an older version's
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = CliRunner().invoke(app, ["report", "20250101-000000-aaaaaa", "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == {"run": "20250101-000000-aaaaaa"}
    result = CliRunner().invoke(app, ["report", "20240101-000000-bbbbbb", "--format", "json"])
    assert result.exit_code == EXIT_USAGE and "no run '20240101-000000-bbbbbb'" in result.stderr
    monkeypatch.chdir(made_here)
    result = CliRunner().invoke(app, ["report", "20240101-000000-bbbbbb", "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == {"run": "20240101-000000-bbbbbb"}


@pytest.mark.parametrize("where", ["before", "after"])
def test_cache_dir_option_is_where_runs_are_looked_for(monkeypatch, tmp_path, where):
    monkeypatch.delenv(knobs.CACHE_DIR, raising=False)
    fake_run(tmp_path / "mine" / "runs", "20250101-000000-cccccc")
    option = ["--cache-dir", str(tmp_path / "mine")]
    args = ["report", "20250101-000000-cccccc", "--format", "json"]
    result = CliRunner().invoke(app, option + args if where == "before" else args + option)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"run": "20250101-000000-cccccc"}
    assert knobs.CACHE_DIR not in os.environ, "restored once the command ends"


def test_outputs_beside_the_examples_are_ignored_by_git():
    outputs = [
        "examples/softmax.optimized.py",
        "examples/softmax.optimized.diff",
        "examples/softmax.optimized-20250101-000000-abcdef.py",
        "examples/softmax.diagnose.py",
        "examples/softmax.diagnose.patch",
        "examples/softmax.diagnose.bak",
    ]
    try:
        ignored = subprocess.run(
            ["git", "check-ignore", *outputs, "examples/softmax.py"], cwd=ROOT, capture_output=True, text=True
        )
    except FileNotFoundError:
        pytest.skip("no git here")
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.stdout.split() == outputs, "every output, and not the example itself"
