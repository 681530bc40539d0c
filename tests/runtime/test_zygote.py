"""Workers forked from a warm zygote: still one fresh process per job, and the same isolation as a
worker started from scratch (the runner's own isolation tests run on forked workers by default)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from diagnose.runtime.runner import call

ENTRIES = "tests.foundation.runner_entries"
ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def test_jobs_fork_from_one_zygote_of_their_environment(monkeypatch):
    monkeypatch.delenv("DIAGNOSE_WORKER_FORK", raising=False)
    first, second = (call(f"{ENTRIES}:parent_pid", {}, timeout_s=120).value for _ in range(2))
    assert first == second != os.getpid()  # the zygote is their parent, and the same one
    interpreted = call(f"{ENTRIES}:parent_pid", {}, timeout_s=120, interpret=True).value
    assert interpreted not in (first, os.getpid())  # another environment, another zygote


def test_what_one_job_patches_never_reaches_the_next():
    assert call(f"{ENTRIES}:patch_torch", {"marker": 7}, timeout_s=120).ok
    state = call(f"{ENTRIES}:torch_state", {}, timeout_s=120).value
    assert state == {"matmul_is_none": False, "marker": None}


def test_the_knob_starts_every_worker_from_scratch(monkeypatch):
    monkeypatch.setenv("DIAGNOSE_WORKER_FORK", "0")
    assert call(f"{ENTRIES}:parent_pid", {}, timeout_s=120).value == os.getpid()


def test_a_crash_is_reported_as_the_signal_that_killed_the_forked_worker():
    result = call(f"{ENTRIES}:segfault", {}, timeout_s=120)
    assert not result.ok and result.failure.kind == "crashed" and "SIGSEGV" in result.failure.message
    assert call(f"{ENTRIES}:echo", {"after": 1}, timeout_s=120).ok  # the zygote serves on


def test_the_zygote_and_its_workers_end_with_their_parent():
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from diagnose.runtime.runner import call; call('{ENTRIES}:hang', {{}}, timeout_s=3600)",
        ],
        cwd=ROOT,
    )
    try:
        tree: list[int] = []
        for _ in range(600):
            zygotes = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
            workers = [w for z in zygotes for w in Path(f"/proc/{z}/task/{z}/children").read_text().split()]
            if workers:
                tree = [int(p) for p in zygotes + workers]
                break
            time.sleep(0.05)
        assert tree, "no forked worker started"
        time.sleep(1.0)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(alive(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in tree if alive(p)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"{left} outlived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_job_gets_its_own_diagnose_variables_from_a_shared_zygote(monkeypatch):
    monkeypatch.setenv("DIAGNOSE_TIMEOUT_S", "77")
    first = call(f"{ENTRIES}:environment", {"name": "DIAGNOSE_TIMEOUT_S"}, timeout_s=120, user_code=False).value
    monkeypatch.setenv("DIAGNOSE_TIMEOUT_S", "88")
    second = call(f"{ENTRIES}:environment", {"name": "DIAGNOSE_TIMEOUT_S"}, timeout_s=120, user_code=False).value
    assert (first["value"], second["value"]) == ("77", "88") and first["parent"] == second["parent"]


def test_tests_share_one_zygote_though_pytest_renames_the_current_test(monkeypatch):
    """pytest rewrites `PYTEST_CURRENT_TEST` at every phase of every test: it must not make a zygote
    (an import of torch and triton) per test."""
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/a.py::one (call)")
    first = call(f"{ENTRIES}:environment", {"name": "PYTEST_CURRENT_TEST"}, timeout_s=120, user_code=False).value
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/b.py::two (call)")
    second = call(f"{ENTRIES}:environment", {"name": "PYTEST_CURRENT_TEST"}, timeout_s=120, user_code=False).value
    assert first["parent"] == second["parent"]
    assert (first["value"], second["value"]) == ("tests/a.py::one (call)", "tests/b.py::two (call)")
