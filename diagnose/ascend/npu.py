"""The NPU runtime path: running user code on an Ascend device through the toolchain's Python.

torch_npu lives in the Ascend toolchain's environment (it needs triton-ascend's `triton` and the
CANN runtime), so every job that runs on the `npu` device (`diagnose.runtime.devices`) must run in
a worker of that environment: `npu_call(entry, payload)` is `diagnose.runtime.call` for it. The
toolchain's probe, run at setup and on every reuse, says whether torch_npu imports and sees a
device; `npu_status()` reports that in one line, and `npu_call` refuses with that line when it is
not so.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.errors import ToolchainError
from diagnose.runtime.runner import (
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_TIMEOUT_S,
    WorkerResult,
)
from diagnose.toolchain import call, find_record


def npu_status(root: Path | None = None) -> tuple[bool, str]:
    """(available, one line): whether the Ascend toolchain can run jobs on an NPU here, and if not, why
    (the reading of its record is `diagnose.runtime.npu.toolchain_blocker`'s)."""
    from diagnose.runtime.npu import toolchain_blocker

    record = find_record("ascend", root)
    blocked = toolchain_blocker(record)
    if blocked:
        return False, f"device npu is not available here: {blocked}"
    return True, f"device npu: {record.capabilities.get('npu_devices', 0)} NPU(s) through {record.python}"


def npu_call(
    entry: str,
    payload: dict,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    env: dict[str, str] | None = None,
    root: Path | None = None,
) -> WorkerResult:
    """Run `entry` on `payload` in a worker of the Ascend toolchain, for the `npu` device.

    torch_npu is left to load itself (the compile workers switch its auto-load off); entries
    import it through `diagnose.runtime.devices.torch_device("npu")` as on any device.
    """
    available, why = npu_status(root)
    if not available:
        raise ToolchainError(why)
    record = find_record("ascend", root)
    return call(entry, payload, python=record.python, timeout_s=timeout_s, memory_limit=memory_limit, env=env)
