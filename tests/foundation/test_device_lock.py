"""The device lock: exclusive keeps out every other holder, shared admits shared, across real processes;
and a verification's jobs take it when a lock file is named."""

import fcntl
import subprocess
import sys
import textwrap

import pytest

from diagnose.errors import UsageError
from diagnose.runtime import device_lock
from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, verify
from tests.conftest import FIXTURES

HOLDER = textwrap.dedent("""
    import sys
    from diagnose.runtime import device_lock
    path, mode = sys.argv[1], sys.argv[2]
    with (device_lock.exclusive(path) if mode == "exclusive" else device_lock.shared(path)):
        print("held", flush=True)
        sys.stdin.readline()  # hold until the test says so
""")


def can_take(path, operation) -> bool:
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, operation | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


@pytest.fixture
def holder(tmp_path):
    started = []

    def start(mode: str):
        process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(tmp_path / "cuda.lock"), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout.readline().strip() == "held"
        started.append(process)
        return process

    yield start
    for process in started:
        process.communicate("\n", timeout=30)


def test_exclusive_keeps_everyone_out(tmp_path, holder):
    holder("exclusive")
    assert not can_take(tmp_path / "cuda.lock", fcntl.LOCK_SH)
    assert not can_take(tmp_path / "cuda.lock", fcntl.LOCK_EX)


def test_shared_admits_shared_not_exclusive(tmp_path, holder):
    holder("shared")
    assert can_take(tmp_path / "cuda.lock", fcntl.LOCK_SH)
    assert not can_take(tmp_path / "cuda.lock", fcntl.LOCK_EX)


def test_released_after_the_block(tmp_path):
    path = tmp_path / "cuda.lock"
    with device_lock.exclusive(str(path)):
        pass
    assert can_take(path, fcntl.LOCK_EX)


def test_no_path_is_no_lock():
    with device_lock.exclusive(None), device_lock.shared(None):
        pass


@pytest.mark.slow
def test_a_verification_takes_the_named_lock(tmp_path):
    """The jobs hold the lock around their device work: the reference job (seconds of work here) cannot
    finish while another worker has the device alone, and the same verification passes once it lets go."""
    path = str(tmp_path / "cuda.lock")
    task = load_task(FIXTURES / "cheats" / "honest.py")
    # Held here, the lock never comes free within the timeout: any timeout proves it, a short one costs less.
    with device_lock.exclusive(path), pytest.raises(UsageError, match="did not finish within 4 s"):
        verify(task, CheckOptions(device="cpu", seeds=(0,), timeout_s=4, device_lock=path))
    assert verify(task, CheckOptions(device="cpu", seeds=(0,), timeout_s=120, device_lock=path)).passed
