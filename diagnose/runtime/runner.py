"""Running one job in a fresh worker subprocess, with a wall-clock timeout and a memory cap.

Every execution of user code goes through `call`. The worker is a new process per job, in its own
process group: a segfault, a hang, an illegal memory access, an out-of-memory or an exception becomes a
`Failure` of that job and nothing else, and a worker whose CUDA context faulted is never reused because
no worker is. The parent polls the child's resident memory and kills the whole group when it passes
the cap (an address-space limit would break CUDA, which reserves huge virtual ranges).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose.knobs import Knobs
from diagnose.records import Failure
from diagnose.runtime import zygote

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MEMORY_LIMIT = 8 * 2**30
POLL_S = 0.05
LOG_TAIL = 4000


@dataclass(frozen=True)
class WorkerResult:
    """What came back from one job: a value, or a structured failure; plus the worker's log."""

    ok: bool
    value: Any = None
    failure: Failure | None = None
    wall_s: float = 0.0
    log: str = ""


def worker_env(interpret: bool, extra: dict[str, str] | None) -> dict[str, str]:
    """The child's environment: the parent's, with the interpreter switched on or off explicitly."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    # The package may be run from a checkout that is not installed: make it importable in the child.
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def resident_bytes(pid: int) -> int:
    """Resident memory of a process and its children (0 once it is gone)."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def kill_group(proc: subprocess.Popen | zygote.ForkedWorker) -> None:
    zygote.end_group(proc.pid)
    proc.wait()


def describe_exit(returncode: int) -> tuple[str, str]:
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return "crashed", f"worker died of {name}"
    return "protocol", f"worker exited with code {returncode} without a result"


def call(
    entry: str,
    payload: dict,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interpret: bool = False,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    env: dict[str, str] | None = None,
    python: str | None = None,
    user_code: bool = True,
) -> WorkerResult:
    """Run `entry` ("module:function") on `payload` in a fresh worker; never raises for user failures.

    `python` is the interpreter of the worker (default: this one); another toolchain's environment
    (triton-ascend lives in its own) runs the same worker module and protocol. For a job that runs user
    code (`user_code`), the command's `--timeout` (`DIAGNOSE_TIMEOUT_S`, `diagnose.knobs`) replaces
    `timeout_s` when set: one option bounds every worker a command starts, those of layers that pick
    their own limits included. Jobs of ours (probes, the ceilings measurement) keep their own limit.
    """
    knobs = Knobs.read()
    if user_code:
        timeout_s = knobs.timeout_s or timeout_s
    with tempfile.TemporaryDirectory(prefix="diagnose-worker-") as tmp:
        request, result, log_path = Path(tmp, "request.json"), Path(tmp, "result.json"), Path(tmp, "log")
        request.write_text(json.dumps({"entry": entry, "payload": payload}))
        started, start = time.time(), time.monotonic()
        proc = start_worker(
            request,
            result,
            log_path,
            worker_env(interpret, env),
            python,
            warm=knobs.fork_workers and python in (None, sys.executable),
        )
        try:
            failure = watch(proc, timeout_s, memory_limit)
        except BaseException:
            # Ctrl-C in the parent: the worker leads its own group, out of reach of the terminal's
            # signal, and must not run on alone.
            kill_group(proc)
            raise
        if failure is not None and failure.kind == "timeout" and user_code:  # say which option sets it
            failure = Failure("timeout", f"{failure.message} (--timeout)")
        wall = time.monotonic() - start
        log_text = log_path.read_bytes()[-LOG_TAIL:].decode("utf-8", "replace")
        if failure is None and result.exists():
            data = json.loads(result.read_text())
            if data["ok"]:
                log_job(knobs.job_log, entry, payload, started, wall, True)
                return WorkerResult(True, value=data["value"], wall_s=wall, log=log_text)
            failure = Failure(data["kind"], data["message"], data.get("traceback", "")[-LOG_TAIL:])
        elif failure is None:
            kind, message = describe_exit(proc.returncode)
            failure = Failure(kind, message, log_text)
        log_job(knobs.job_log, entry, payload, started, wall, False)
        return WorkerResult(False, failure=failure, wall_s=wall, log=log_text)


def log_job(path: Path | None, entry: str, payload: dict, started: float, wall: float, ok: bool) -> None:
    """One line of the job log (`DIAGNOSE_JOB_LOG`), when one is asked for. A line is one `write` of an
    append-mode file, so the jobs of concurrent threads and processes do not interleave within a line."""
    if path is None:
        return
    mode = payload.get("mode") if isinstance(payload, dict) else None
    line = {"entry": entry, "mode": mode, "start": round(started, 3), "seconds": round(wall, 3), "ok": ok}
    with contextlib.suppress(OSError), open(path, "a") as handle:
        handle.write(json.dumps(line) + "\n")


def prestart(interpret: bool = False, env: dict[str, str] | None = None) -> None:
    """Start the zygote that `call(..., interpret=interpret, env=env)` will fork its workers from, now
    and without waiting for it: its imports of torch and triton (2-3 s on a GPU host) then overlap what
    the caller does before its first job (a check's question whether a GPU is there imports torch too)."""
    if Knobs.read().fork_workers:
        with contextlib.suppress(OSError):
            zygote.pool().zygote_for(worker_env(interpret, env))


def start_worker(request: Path, result: Path, log_path: Path, env: dict[str, str], python: str | None, warm: bool):
    """The worker process of one job: forked from a warm zygote of this environment (`zygote.py`) when
    `warm`, else started from scratch; either way a fresh process leading its own group."""
    if warm:
        try:
            return zygote.pool().spawn(env, request, result, log_path)
        except OSError:
            pass  # no zygote here (it could not start or ended): start the worker from scratch
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [python or sys.executable, "-m", "diagnose.runtime.worker", str(request), str(result)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def user_failure(failure: Failure, *paths: str | os.PathLike) -> str | None:
    """One line saying why a job failed, when it failed because of the user's files `paths`: it ran out
    of time (`--timeout`) or their code raised (its traceback runs through one of them); else None."""
    if failure.kind == "timeout":
        return failure.message
    if failure.kind != "protocol" and any(str(path) in failure.log_tail for path in paths):
        return failure.message.strip().splitlines()[0] if failure.message.strip() else failure.kind
    return None


def watch(proc: subprocess.Popen, timeout_s: float, memory_limit: int) -> Failure | None:
    """Wait for the worker; kill its group on timeout or when it passes the memory cap."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        if time.monotonic() > deadline:
            kill_group(proc)
            return Failure("timeout", f"worker did not finish within {timeout_s:g} s")
        used = resident_bytes(proc.pid)
        if used > memory_limit:
            kill_group(proc)
            return Failure(
                "out_of_memory",
                f"worker used {used / 2**30:.1f} GiB, over the {memory_limit / 2**30:.1f} GiB cap",
            )
        with contextlib.suppress(subprocess.TimeoutExpired):  # returns as soon as the worker ends
            proc.wait(timeout=POLL_S)
    # The worker is gone; anything it left in its group (a stray child) goes too.
    zygote.end_group(proc.pid)
    return None
