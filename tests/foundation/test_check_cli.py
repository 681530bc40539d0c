"""`diagnose check` end to end, as a user runs it: exit codes, one-line errors, the JSON report."""

import json

import pytest

from diagnose.report.reports import validate
from tests.conftest import EXAMPLES, FIXTURES


@pytest.mark.slow
def test_example_passes_and_its_json_report_validates(cli, tmp_path):
    out = tmp_path / "report.json"
    result = cli("check", str(EXAMPLES / "vector_add.py"), "--json", "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # progress went to stderr: one line per step, as it starts
    steps = [line.split(":")[0] for line in result.stderr.splitlines()]
    assert steps == ["[check] reference", "[check] candidate", "[check] compare", "[check] ghost"], result.stderr
    validate(data)
    assert json.loads(out.read_text()) == data
    verdict = data["candidates"][0]["verdict"]
    assert verdict["passed"] and verdict["device"] == "cpu"
    assert all(t["median_ms"] is None and "not timed" in t["note"] for t in verdict["timings"])
    assert [step for step, _ in verdict["phases"]] == ["reference", "candidate", "compare", "ghost", "total"]


@pytest.mark.slow
def test_quiet_silences_the_progress(cli):
    result = cli("check", str(FIXTURES / "tasks" / "get_inputs_raises.py"), "--quiet")
    assert result.returncode == 2 and result.stderr.startswith("diagnose: error: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_each_step_is_announced_as_it_starts():
    from diagnose.verify.harness import Phases

    heard = []
    phases = Phases(on_start=heard.append)
    with phases.clock("reference"):
        assert heard == ["reference"], "before the step's work, not after it"
    assert [name for name, _ in phases.done()] == ["reference", "total"]


@pytest.mark.slow
def test_table_output_says_not_timed_and_passed(cli):
    result = cli("check", str(FIXTURES / "cheats" / "honest.py"))
    assert result.returncode == 0, result.stderr
    assert "not timed" in result.stdout and "PASSED" in result.stdout
    assert "harness wall time: reference" in result.stdout


@pytest.mark.slow
def test_failed_verification_exits_1(cli):
    result = cli("check", str(FIXTURES / "tasks" / "wrong_values.py"))
    assert result.returncode == 1
    assert "FAILED" in result.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (["check", "missing.py"], "missing.py: no such file"),
        (["check", str(FIXTURES / "tasks" / "syntax_error.py")], "syntax error"),
        (["check", str(FIXTURES / "tasks" / "no_model.py")], "no `Model`"),
        (["check", str(FIXTURES / "tasks" / "get_inputs_raises.py")], "the reference failed"),
        (["check", str(FIXTURES / "cheats" / "honest.py"), "--device", "tpu"], "unknown device"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, args, words):
    result = cli(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("[check] ")]  # progress
    assert len(lines) == 1 and words in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback(cli):
    result = cli("--debug", "check", "missing.py")
    assert result.returncode != 0
    assert "Traceback" in result.stderr


@pytest.mark.slow
def test_cuda_missing_is_one_line(cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = cli("check", str(FIXTURES / "cheats" / "honest.py"), "--device", "cuda")
    assert result.returncode == 2 and "cuda is not available" in result.stderr


def test_report_is_never_written_over_the_task(cli, tmp_path):
    task = tmp_path / "task.py"
    task.write_text((FIXTURES / "cheats" / "honest.py").read_text())
    result = cli("check", str(task), "--out", str(task))
    assert result.returncode == 2 and "refusing to overwrite" in result.stderr
    assert task.read_text() == (FIXTURES / "cheats" / "honest.py").read_text()
