"""A warm start for workers: a process that has imported torch and triton forks each one.

Starting a worker from scratch costs about 1.4 s of importing torch on a CPU; a verification starts
three or four workers, an optimize run dozens. A zygote imports torch, triton and the worker module
once and then forks a worker per job. Each job is still a fresh process that no other job ran in: it
is forked from the zygote before any user code ran there, in a session (process group) of its own,
with its output going to the job's log, so a crash, a hang or a patched module stays in that job, and
the parent polls, times out and kills it exactly as a worker it started itself (`runner.call`).
CUDA is never initialised in a zygote (importing torch does not), so each GPU worker makes its own
context.

A zygote serves one environment: what may be read while torch and triton are imported (the
interpreter switch, `PYTHONPATH`, any `TRITON_*` or `TORCH_*` variable) is fixed when it starts, so
the pool keeps one per distinct environment, two kinds of variable aside: `diagnose`'s own
`DIAGNOSE_*` (read when a job runs) and pytest's `PYTEST_CURRENT_TEST` (renamed at every test). Each
worker gets the job's whole environment right after the fork. Zygotes start on first use and end
with this process, or earlier when a caller knows it will need one (`runner.prestart`: its imports then
overlap the caller's own work before the first job) (and, should this process die without ending them, each zygote ends itself and
its workers when its parent is gone). Only workers of this Python fork from a zygote; another
toolchain's interpreter, and every worker when `DIAGNOSE_WORKER_FORK=0`, starts from scratch.

Protocol, one JSON object per line: the parent writes `{"id", "request", "result", "log", "env"}` on the
zygote's stdin; the zygote answers `{"id", "pid"}` once the worker is forked and `{"exit": pid,
"code": returncode}` when it ends (negative: killed by that signal, as `subprocess` says it).
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from diagnose.runtime import worker

START_TIMEOUT_S = 120.0  # the first fork waits for the zygote's imports
POOL_SIZE = 4  # distinct environments kept warm; the least recently used goes first
POLL_S = 0.05
# Variables only `diagnose` reads, and only while a job runs: they do not make another zygote.
OWN_VARIABLES = "DIAGNOSE_"
# Variables that change while this process runs and that nothing reads at import: pytest renames the
# current test in the environment at each of its phases, which made a fresh zygote for every test.
VOLATILE_VARIABLES = frozenset({"PYTEST_CURRENT_TEST"})


def end_group(pid: int) -> None:
    """Kill the process group led by `pid`, if any of it is left (a worker and what it started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class ForkedWorker:
    """A worker forked by a zygote, seen as `runner.call` sees a `subprocess.Popen`: `pid`, `poll()`,
    `wait()`, `returncode` (the zygote reaps it and reports how it ended)."""

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote, self.pid, self.returncode = zygote, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """As `Popen.wait`: the exit code, raising `subprocess.TimeoutExpired` if it is still running
        after `timeout` seconds. Wakes when the zygote reports an exit, not at the next poll."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = POLL_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            self.zygote.wait_for_exit(min(POLL_S, left))
        return self.returncode


class Zygote:
    """One zygote process (parent side) and what it has reported."""

    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "diagnose.runtime.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        self.ids = itertools.count()
        self.write_lock = threading.Lock()
        self.changed = threading.Condition()
        self.pids: dict[int, int] = {}
        self.exits: dict[int, int] = {}
        self.alive = True
        threading.Thread(target=self._read, name="diagnose-zygote-reader", daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            message = json.loads(line)
            with self.changed:
                if "exit" in message:
                    self.exits[message["exit"]] = message["code"]
                else:
                    self.pids[message["id"]] = message["pid"]
                self.changed.notify_all()
        with self.changed:  # the zygote is gone: its workers end themselves when it does
            self.alive = False
            self.changed.notify_all()

    def spawn(self, request: Path, result: Path, log: Path, env: dict[str, str]) -> ForkedWorker:
        job = next(self.ids)
        line = (
            json.dumps({"id": job, "request": str(request), "result": str(result), "log": str(log), "env": env}) + "\n"
        )
        with self.write_lock:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        with self.changed:
            if not self.changed.wait_for(lambda: job in self.pids or not self.alive, START_TIMEOUT_S):
                raise OSError("the zygote did not fork the worker in time")
            if job not in self.pids:
                raise OSError("the zygote ended")
            return ForkedWorker(self, self.pids.pop(job))

    def exit_code(self, pid: int) -> int | None:
        with self.changed:
            if pid in self.exits:
                return self.exits.pop(pid)
            return None if self.alive else -signal.SIGKILL

    def wait_for_exit(self, timeout: float) -> None:
        with self.changed:
            self.changed.wait(timeout)

    def close(self) -> None:
        end_group(self.proc.pid)
        self.proc.wait()


class Pool:
    """The zygotes of this process, one per worker environment."""

    def __init__(self):
        self.lock = threading.Lock()
        self.zygotes: dict[tuple, Zygote] = {}
        atexit.register(self.close)

    def spawn(self, env: dict[str, str], request: Path, result: Path, log: Path) -> ForkedWorker:
        return self.zygote_for(env).spawn(request, result, log, env)

    def zygote_for(self, env: dict[str, str]) -> Zygote:
        """The live zygote of `env`'s environment, started now if there is none (it imports on its own,
        and forks its first worker once that is done)."""
        key = tuple(
            sorted(
                (name, value)
                for name, value in env.items()
                if not name.startswith(OWN_VARIABLES) and name not in VOLATILE_VARIABLES
            )
        )
        with self.lock:
            zygote = self.zygotes.pop(key, None)
            if zygote is None or not zygote.alive:
                zygote = Zygote(env)
            self.zygotes[key] = zygote  # most recently used last
            while len(self.zygotes) > POOL_SIZE:
                self.zygotes.pop(next(iter(self.zygotes))).close()
        return zygote

    def close(self) -> None:
        with self.lock:
            for zygote in self.zygotes.values():
                zygote.close()
            self.zygotes.clear()


# The one pool of this process, made on first use: zygotes are per process by nature (a worker must be
# forked from a process of the same interpreter and environment), as multiprocessing's forkserver is.
_POOL: Pool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> Pool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = Pool()
        return _POOL


# ---------------------------------------------------------------- the zygote process


def _worker(job: dict) -> None:
    """In the forked child: become a worker of a session of its own, output to the job's log."""
    try:
        os.setsid()
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(job["env"])
        worker.main(["worker", job["request"], job["result"]])  # ends the process
    finally:
        os._exit(70)


def serve() -> None:
    import torch  # noqa: F401 - what makes the zygote worth having (deferred: the parent never imports it)
    import triton  # noqa: F401 - as torch
    import triton.language  # noqa: F401 - as torch

    parent = os.getppid()
    children: set[int] = set()
    out = sys.stdout

    def say(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    # A worker's exit wakes the loop at once (SIGCHLD writes into `woken`), rather than at the next poll:
    # the parent hears of it as soon as it happens.
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake)
    pending = b""  # read from the descriptor itself: a buffered reader could hold a request select cannot see
    while True:
        if os.getppid() != parent:  # the parent is gone without ending us: end its workers too
            break
        ready, _, _ = select.select([0, woken], [], [], POLL_S)
        if woken in ready:
            os.read(woken, 1 << 12)
        if 0 in ready:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                break
            pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            job = json.loads(line)
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                os.close(woken)
                os.close(wake)
                _worker(job)
            children.add(pid)
            say({"id": job["id"], "pid": pid})
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.discard(pid)
            say({"exit": pid, "code": os.waitstatus_to_exitcode(status)})
    for pid in children:
        end_group(pid)


if __name__ == "__main__":
    serve()
