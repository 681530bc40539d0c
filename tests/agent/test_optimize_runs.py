"""`diagnose optimize` end to end on the CPU: reports that validate, and a run killed mid-way that resumes
to the same result as one left alone."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diagnose.report.reports import validate
from tests.conftest import EXAMPLES, ROOT


# Two candidates exercise every step (propose, verify, rank, report) at a fraction of the default's cost.
BUDGET = ("--max-candidates", "2")


def optimize_cli(*args, cache, env=(), **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "diagnose.cli", "optimize", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DIAGNOSE_CACHE_DIR": str(cache), **dict(env)},
        **kwargs,
    )


def only_run(cache: Path) -> Path:
    (run,) = list((cache / "runs").iterdir())
    return run


def comparable(report: dict) -> dict:
    # Findings on a candidate file carry that run's folder in their paths: compare what they say and where.
    findings = [(f["code"], f["location"]["line"], f["message"]) for f in report["findings"]]
    # When each step ended differs between two runs; what each step did and why must not.
    trace = [{k: v for k, v in step.items() if k != "at"} for step in report["trace"]]
    return {
        "trace": trace,
        "best": report["best"],
        "findings": findings,
        "candidates": [(c["candidate"]["id"], c["verdict"]["passed"]) for c in report["candidates"]],
    }


def check_example_run(example: str, task: Path, result: subprocess.CompletedProcess, cache: Path) -> dict:
    """What every optimize run on the CPU shows: a report that validates, the trace's first levels, the
    HTML page and its roofline, the summary table, and the input file untouched."""
    assert result.returncode == 0, result.stderr[-2000:]
    run = only_run(cache)
    report = json.loads((run / "report.json").read_text())
    validate(report)
    assert report["device"] == "cpu" and report["target"] == "cuda:sm90" and report["wall_s"] > 0
    assert [s["level"] for s in report["trace"]][:2] == ["baseline", "triage"]
    assert "not timed" in report["trace"][0]["reason"]
    page = (run / "report.html").read_text()
    assert "Nothing was timed" in page and "<h2>Roofline</h2>" in page
    if report.get("roofline"):  # the profile level ran: its static estimates are plotted, labelled so
        assert (run / "roofline.svg").exists() and page.count("<svg") == 1 and "(estimate) [" in page
        assert "![roofline](roofline.svg)" in (run / "report.md").read_text()
    assert "candidates (nothing timed: speedups are estimates)" in result.stdout  # the summary table
    assert all(c["candidate"]["id"][:20] in result.stdout for c in report["candidates"])
    assert task.read_text() == (EXAMPLES / f"{example}.py").read_text(), "the input is never overwritten"
    return report


# Two of the four examples: what is asserted is the run's shape, the same for each; the rewrites each
# example should get are verified on all four by tests/rewrite/test_examples.py (layernorm and matmul
# took 190 of CI's CPU seconds here). vector_add's run is the killed-run test's run left alone, below.
@pytest.mark.slow
def test_optimize_softmax_on_cpu(tmp_path):
    task = tmp_path / "softmax.py"
    task.write_text((EXAMPLES / "softmax.py").read_text())
    result = optimize_cli(str(task), *BUDGET, cache=tmp_path / "cache", timeout=900)
    check_example_run("softmax", task, result, tmp_path / "cache")


@pytest.mark.slow
def test_options_reach_every_verification_and_a_killed_run_resumes_to_the_same_result(tmp_path):
    """One run of vector_add left alone (with --seeds 2 and --no-compile, which must reach every
    verification of the run, and a TMPDIR of its own, which it must leave empty), then the same run
    killed mid-way and resumed: the same trace, candidates and best."""
    task = tmp_path / "vector_add.py"
    task.write_text((EXAMPLES / "vector_add.py").read_text())
    (tmp_path / "tmp").mkdir()  # where the run's job folders go: none is left behind
    flags = (*BUDGET, "--seeds", "2", "--no-compile")
    alone = optimize_cli(
        str(task), *flags, cache=tmp_path / "alone", env={"TMPDIR": str(tmp_path / "tmp")}, timeout=900
    )
    expected = check_example_run("vector_add", task, alone, tmp_path / "alone")
    verdicts = [expected["baseline"], *(c["verdict"] for c in expected["candidates"])]
    assert len(verdicts) >= 2, "the baseline and at least one candidate"
    for verdict in verdicts:
        assert {case["seed"] for case in verdict["cases"]} == {0, 1}
        assert "compile" not in {t["variant"] for t in verdict["timings"]}
    assert "reference" in dict(expected["baseline"]["phases"])
    assert not list((tmp_path / "tmp").iterdir()), "the run deletes its kept reference"
    assert json.loads((only_run(tmp_path / "alone") / "run.json").read_text())["budget"]["seeds"] == 2

    cache = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "diagnose.cli", "optimize", str(task), *flags],
        cwd=ROOT,
        env={**os.environ, "DIAGNOSE_CACHE_DIR": str(cache)},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline, checkpoints = time.monotonic() + 300, 0
    while time.monotonic() < deadline and proc.poll() is None:
        db = next(iter((cache / "runs").glob("*/checkpoints.sqlite")), None) if (cache / "runs").exists() else None
        if db is not None:
            try:
                checkpoints = sqlite3.connect(db).execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
            except sqlite3.OperationalError:
                checkpoints = 0
            if checkpoints >= 4:  # past baseline and triage
                break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    run = only_run(cache)
    assert checkpoints >= 4 and not (run / "report.json").exists(), "killed before the end"
    resumed = optimize_cli("--resume", run.name, cache=cache, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert comparable(json.loads((run / "report.json").read_text())) == comparable(expected)


@pytest.mark.slow
def test_bad_input_and_unknown_run_are_one_line(tmp_path):
    result = optimize_cli(str(tmp_path / "missing.py"), cache=tmp_path)
    assert result.returncode == 2 and "no such file" in result.stderr and "Traceback" not in result.stderr
    result = optimize_cli("--resume", "nope", cache=tmp_path)
    assert result.returncode == 2 and "no run 'nope'" in result.stderr
    result = optimize_cli(str(EXAMPLES / "vector_add.py"), "--seeds", "1", cache=tmp_path)
    assert result.returncode == 2 and "--seeds" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_baselines_reference_job_serves_every_round_of_candidates(tmp_path):
    from diagnose.agent.tools import Tools
    from diagnose.task import load_task

    task = tmp_path / "vector_add.py"
    task.write_text((EXAMPLES / "vector_add.py").read_text())
    candidate = tmp_path / "candidate.py"
    candidate.write_text(task.read_text())
    tools = Tools(str(tmp_path), seeds=2, compile_baseline=False)
    try:
        baseline = tools.verify_task(str(task), "cpu", "cuda:sm90")
        assert baseline["passed"] and "reference" in dict(baseline["phases"])
        kept = tools.reference.serving(load_task(task), tools.check_options("cpu"))
        for round_ in range(2):
            (result,) = tools.evaluate(
                str(task), [{"id": f"same-{round_}", "path": str(candidate)}], "cpu", "cuda:sm90"
            )
            assert result["verdict"]["passed"]
            assert dict(result["verdict"]["phases"])["reference (prepared)"] == 0.0
            assert tools.reference.serving(load_task(task), tools.check_options("cpu")) is kept
    finally:
        tools.close()
    assert not Path(kept.job_dir).exists()
