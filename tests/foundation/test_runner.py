"""The runner's isolation: every misbehaving worker becomes a structured failure, the parent survives."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diagnose.runtime.runner import call

ENTRIES = "tests.foundation.runner_entries"


def test_value_comes_back_despite_noise_on_stdout():
    result = call(f"{ENTRIES}:echo", {"x": [1, 2]}, timeout_s=30)
    assert result.ok, result.failure
    assert result.value == {"echo": {"x": [1, 2]}}
    assert "noise on stdout" in result.log


def test_segfault_is_a_crash_of_that_job():
    result = call(f"{ENTRIES}:segfault", {}, timeout_s=30)
    assert not result.ok
    assert result.failure.kind == "crashed"
    assert "SIGSEGV" in result.failure.message


@pytest.mark.slow
def test_hang_is_killed_at_the_timeout():
    start = time.monotonic()
    result = call(f"{ENTRIES}:hang", {}, timeout_s=2)
    assert time.monotonic() - start < 10
    assert result.failure.kind == "timeout"
    assert "2 s" in result.failure.message


def test_memory_hog_is_killed_at_the_cap():
    result = call(f"{ENTRIES}:eat_memory", {}, timeout_s=60, memory_limit=512 * 2**20)
    assert result.failure.kind == "out_of_memory"
    assert "cap" in result.failure.message


def test_exception_is_reported_with_its_message():
    result = call(f"{ENTRIES}:raise_error", {}, timeout_s=30)
    assert result.failure.kind == "exception"
    # the message names the line in the code that raised (here a test entry of this repository's tests)
    assert result.failure.message.startswith("ValueError: bad value 42 (at ")
    assert "runner_entries.py:" in result.failure.message and " in raise_error)" in result.failure.message
    assert "raise_error" in result.failure.log_tail


def test_hard_exit_without_result_is_a_protocol_failure():
    result = call(f"{ENTRIES}:exit_hard", {}, timeout_s=30)
    assert result.failure.kind == "protocol"
    assert "code 7" in result.failure.message


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] == "Z"  # a zombie waits for init to reap it
    except OSError:
        return True


def test_children_left_behind_are_killed():
    result = call(f"{ENTRIES}:spawn_orphan", {}, timeout_s=30)
    assert result.ok
    pid = result.value["child"]
    for _ in range(50):
        if gone(pid):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"child {pid} still running")


def test_a_worker_ends_when_its_parent_is_killed_outright():
    # A parent killed by SIGKILL cannot kill the worker's group: the worker must notice on its own.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from diagnose.runtime.runner import call; call('{ENTRIES}:hang', {{}}, timeout_s=3600)",
        ],
        cwd=Path(__file__).parents[2],
    )
    try:
        children: list[str] = []
        for _ in range(300):
            children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
            if children:
                break
            time.sleep(0.05)
        assert children, "the worker never started"
        time.sleep(1.0)  # the worker is past its start (its watch thread is running)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        worker = int(children[0])
        for _ in range(100):
            if gone(worker):
                break
            time.sleep(0.1)
        else:
            os.kill(worker, signal.SIGKILL)
            raise AssertionError(f"worker {worker} outlived its parent")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_interpreter_flag_is_set_only_when_asked():
    assert call(f"{ENTRIES}:interpreter_flag", {}, timeout_s=30, interpret=True).value == "1"
    assert call(f"{ENTRIES}:interpreter_flag", {}, timeout_s=30, interpret=False).value is None


def test_the_job_log_has_a_line_per_job_with_its_outcome(tmp_path, monkeypatch):
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("DIAGNOSE_JOB_LOG", str(log))
    before = time.time()
    assert call(f"{ENTRIES}:echo", {"mode": "ghost"}, timeout_s=30).ok
    assert not call(f"{ENTRIES}:raise_error", {}, timeout_s=30).ok
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(j["entry"], j["mode"], j["ok"]) for j in lines] == [
        (f"{ENTRIES}:echo", "ghost", True),
        (f"{ENTRIES}:raise_error", None, False),
    ]
    # The log keeps milliseconds; rounding is monotone, so the rounded clock still orders them.
    assert round(before, 3) <= lines[0]["start"] <= lines[1]["start"] and all(j["seconds"] > 0 for j in lines)
