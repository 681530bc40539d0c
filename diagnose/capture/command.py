"""`diagnose capture -- COMMAND`: run the user's own command and keep the Triton launches it made.

The command runs as the user would run it (its output goes to the terminal, its exit code is reported)
with this package's `bootstrap/` folder first on `PYTHONPATH`, so that every Python process it starts
loads the tracer (`diagnose/capture/tracer.py`) before anything else. Where the kernels run (`MODES`):
on the GPU; on a machine without one (or with `--device cpu`) in Triton's interpreter on the CPU
stand-in (`diagnose/runtime/cpu_standin.py`); or, with `--device none`, nowhere: each launch is
recorded and then skipped through Triton's `jit_cache_hook` (a hook that answers True tells
`JITFunction.run` not to compile; it returns None), for projects whose code the interpreter cannot run
or runs too slowly. The command's results are then meaningless and
its tests fail after their first launch; the shapes of what it launched are what is kept. The records, one JSON line each, are merged afterwards into
`.diagnose/launches/` of the project folder (`diagnose/task/launches.py`). A command that fails after
launching kernels (a test that asserts something the CPU cannot give) still leaves its launches.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.task.launches import LaunchRecord, merge

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CaptureResult:
    """What one capture run gave: the command's exit code, the distinct launches, the files written."""

    returncode: int | None
    records: tuple[LaunchRecord, ...]
    files: tuple[Path, ...]
    seconds: float
    timed_out: bool = False


MODES = {
    "gpu": "on the GPU",
    "interpreter": "on the CPU (Triton's interpreter)",
    "record": "recorded, not run (no device)",
}


def capture_env(out: Path, mode: str, target: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOTSTRAP), str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    env["DIAGNOSE_CAPTURE_DIR"] = str(out)
    env["DIAGNOSE_CAPTURE_TARGET"] = target
    env["DIAGNOSE_CAPTURE_MODE"] = mode
    if mode == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def run_capture(
    command: list[str], project: Path, mode: str, target: str = "cuda:sm90", timeout_s: float | None = None
) -> CaptureResult:
    """Run `command` in `project` with the tracer in every Python process; merge what it launched.
    `mode` is one of `MODES`."""
    if mode not in MODES:
        raise ValueError(f"capture mode {mode!r}: one of {', '.join(MODES)}")
    if not command:
        raise UsageError("give the command to run after `--`: diagnose capture -- pytest tests/test_ops.py")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="diagnose-capture-") as folder:
        out = Path(folder)
        try:
            proc = subprocess.Popen(command, cwd=project, env=capture_env(out, mode, target), start_new_session=True)
        except FileNotFoundError:
            raise UsageError(f"{command[0]}: command not found") from None
        timed_out = False
        try:
            with _terminated_as_interrupt():
                returncode = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            returncode, timed_out = None, True
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM: the command runs in a group of its own, end it too
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        records = read_records(out)
    files = merge(project, list(records)) if records else []
    return CaptureResult(returncode, tuple(records), tuple(files), time.monotonic() - start, timed_out)


@contextlib.contextmanager
def _terminated_as_interrupt():
    """SIGTERM raises KeyboardInterrupt while the command runs (the main thread only: elsewhere there
    is no handler to set), so that a capture that is killed ends the command it started."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def read_records(folder: Path) -> list[LaunchRecord]:
    """The records the processes of one run wrote (`capture-<pid>.jsonl`), counts added up."""
    found: dict[str, LaunchRecord] = {}
    counts: dict[str, int] = {}
    for path in sorted(folder.glob("capture-*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                data = json.loads(line)
            except json.JSONDecodeError:  # a process killed while writing
                continue
            if "count_of" in data:
                counts[data["count_of"]] = counts.get(data["count_of"], 0) + data["count"] - 1
                continue
            key = data["key"]
            if key in found:
                counts[key] = counts.get(key, 0) + 1
                continue
            found[key] = LaunchRecord(
                module_file=data["module_file"],
                kernel=data["kernel"],
                line=data["line"],
                launch=data["launch"],
                call=data.get("call"),
                host=data.get("host", ""),
                by=data.get("by"),
                kernel_file=data.get("kernel_file"),
            )
    return [LaunchRecord(**{**r.__dict__, "count": 1 + counts.get(k, 0)}) for k, r in found.items()]
