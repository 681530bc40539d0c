"""The worker process: runs one entry function on one JSON payload, writes one JSON result.

Started by `diagnose.runtime.runner.call` as `python -m diagnose.runtime.worker REQUEST RESULT`.
REQUEST is a JSON file `{"entry": "module:function", "payload": {...}}`; the function is imported, called
with the payload and must return a JSON-able value. RESULT receives `{"ok": true, "value": ...}` or
`{"ok": false, "kind": ..., "message": ..., "traceback": ...}`. The result goes to a file rather than
stdout so that whatever the user's code prints cannot corrupt it.

Environment that must hold before `triton` is imported (`TRITON_INTERPRET=1` for the CPU device) is
set by the parent in the child's environment, never here. An interpreted worker runs user code written
for a GPU on the CPU stand-in (`diagnose/runtime/cpu_standin.py`) unless `DIAGNOSE_STANDIN=0`.

The worker leads its own process group (the parent kills that group on a timeout), so a parent killed
outright (SIGKILL, no chance to clean up) would leave it running: a killed run's compiles would go on
writing the cache that the resumed run reads. A watch thread ends the worker's group when its parent
is gone.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time
import traceback

from diagnose.errors import UsageError
from diagnose.runtime import cpu_standin
from diagnose.task.harness import header


def classify(exc: BaseException) -> str:
    """The failure kind of an exception raised by user code or by a job."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError) or "OutOfMemoryError" in type(exc).__name__ or "out of memory" in text:
        return "out_of_memory"
    if "CUDA error" in text or "illegal memory access" in text or "cudaError" in text:
        return "cuda_error"
    if isinstance(exc, UsageError) or isinstance(exc, (ImportError, SyntaxError)):
        return "load_error"
    return "exception"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")
    where = user_frame(exc)
    return f"{line} (at {where})" if where else line


PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY_ROOTS = tuple({os.path.dirname(os.__file__), PACKAGE})


def user_frame(exc: BaseException) -> str | None:
    """`file.py:12 in setup`: the innermost frame of the traceback in the user's own code (not this
    package, the standard library or an installed package), a kernel module's task file shown as the
    module itself (the same lines)."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        file = os.path.abspath(frame.filename)
        if file.startswith(LIBRARY_ROOTS) or "site-packages" in file or frame.filename.startswith("<"):
            continue
        return f"{_shown(file)}:{frame.lineno} in {frame.name}"
    return None


def _shown(file: str) -> str:
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            found = header(handle.read())
    except OSError:
        found = None
    path = str(found.origin) if found else file
    try:
        relative = os.path.relpath(path)
        return relative if not relative.startswith("..") else path
    except ValueError:
        return path


def resolve(entry: str):
    module_name, _, function_name = entry.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def write_result(path: str, result: dict) -> None:
    """Write atomically: a parent that finds the file finds it whole."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        json.dump(result, handle)
    os.replace(tmp, path)


PARENT_POLL_S = 0.5


def end_with_parent(parent: int) -> None:
    """Kill this worker's group (itself and whatever it started) once `parent` is no longer its parent."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="diagnose-parent-watch", daemon=True).start()


# Entries that run user code written for NVIDIA or AMD GPUs (the Ascend toolchain's have a stand-in of their own).
STANDIN_ENTRIES = (
    "diagnose.verify.",
    "diagnose.ir.",
    "diagnose.profiling.",
    "diagnose.optimizer.",
    "diagnose.capture.",
)


# Entries that only compile offline: they run the user's host code on CPU or `meta` tensors to record its
# launches, so a device query on such a tensor (`torch.cuda.get_device_properties(x.device)`) fails even
# where a GPU is visible; the stand-in answers it as the target would.
OFFLINE_ENTRIES = (
    "diagnose.optimizer.jobs:static_batch",
    "diagnose.profiling.jobs:static_job",
    "diagnose.ir.inspect:inspect_file",
)


def install_standin(entry: str) -> None:
    """The CPU stand-in for a GPU (`diagnose/runtime/cpu_standin.py`): always in an interpreted worker
    and in an offline-compiling one (`OFFLINE_ENTRIES`), and in any other compiling one where no GPU
    is visible."""
    choice = os.environ.get("DIAGNOSE_STANDIN", "auto")
    if choice == "0" or not entry.startswith(STANDIN_ENTRIES):
        return
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if not interpreted and choice == "auto" and entry not in OFFLINE_ENTRIES:
        import torch  # deferred: torch is heavy

        if torch.cuda.is_available():
            return

    cpu_standin.install(interpreter=interpreted)


def main(argv: list[str]) -> int:
    request_path, result_path = argv[1], argv[2]
    if os.getpgrp() == os.getpid():  # started by `call` in a group of its own
        end_with_parent(os.getppid())
    with open(request_path) as handle:
        request = json.load(handle)
    try:
        install_standin(request["entry"])
        value = resolve(request["entry"])(request["payload"])
        write_result(result_path, {"ok": True, "value": value})
    except BaseException as exc:  # noqa: BLE001 - every failure of user code becomes a record
        sys.stderr.write(traceback.format_exc())
        write_result(
            result_path,
            {
                "ok": False,
                "kind": classify(exc),
                "message": one_line(exc),
                "traceback": traceback.format_exc()[-8000:],
            },
        )
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: user code may have left threads or CUDA state that hang or crash at exit.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
