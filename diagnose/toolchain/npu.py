"""Where jobs for the `npu` device run: an interpreter in which torch_npu imports and sees an NPU.

Running a Triton kernel on an Ascend NPU needs triton-ascend as `triton`, torch_npu and the CANN
runtime in one interpreter. Two are looked at, in this order:

1. the Ascend toolchain recorded in the cache (`diagnose toolchain setup ascend`): its probe, run at
   setup and whenever the toolchain is reused (`diagnose.toolchain.ensure`), recorded in
   `capabilities["npu"]` why torch_npu cannot run there (None: it imported and saw
   `capabilities["npu_devices"]` NPUs). Its workers get the toolchain's environment, except the
   switch that keeps torch from auto-loading torch_npu (compile workers need it off, NPU jobs need
   torch_npu);
2. this interpreter, when `torch_npu` is installed in it (a user's own triton-ascend environment):
   `probe` runs in a worker, never here, since a broken CANN install can take the importing
   process down (a worker start, seconds, each time it is asked: the harness asks once per
   verification); it checks that torch_npu imports, that `triton` is triton-ascend and that an NPU
   is visible.

The record is what the toolchain's last probe saw: an NPU removed since makes the jobs fail as
structured failures of the candidate, and `diagnose toolchain setup ascend` probes again.

`decide(record, here)` is the choice itself, on given inputs; `npu_placement()` gathers them. When
neither interpreter can run NPU jobs the answer is one line that says what each one lacks.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from diagnose.runtime.devices import Placement
from diagnose.runtime.runner import call
from diagnose.toolchain.ascend_environment import npu_blocker
from diagnose.toolchain.config import find_record
from diagnose.toolchain.specs import spec_for

# Set to 0 in the Ascend toolchain's compile workers (`diagnose.toolchain.specs.ASCEND.worker_env`).
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"
PROBE_TIMEOUT_S = 120.0


def toolchain_blocker(record) -> str | None:
    """Why the recorded Ascend toolchain cannot run NPU jobs (None: it can)."""
    if record is None:
        return "the Ascend toolchain is not set up (`diagnose toolchain setup ascend`)"
    reason = record.capabilities.get("npu", "its probe did not report on torch_npu")
    if reason is None and not record.capabilities.get("npu_devices"):
        reason = "torch_npu sees no NPU device"
    return reason if reason is None or "toolchain" in reason else f"Ascend toolchain: {reason}"


def decide(record, here: str | None) -> tuple[Placement | None, str]:
    """The placement for NPU jobs from the toolchain's record (a `ToolchainRecord` or None) and
    `here`, why this interpreter cannot run them (None: it can); else (None, one line)."""
    blocked = toolchain_blocker(record)
    if blocked is None:
        env = tuple((k, v) for k, v in spec_for("ascend").worker_env if k != AUTOLOAD)
        return Placement("npu", python=record.python, env=env), ""
    if here is None:
        return Placement("npu"), ""
    return None, f"device npu is not available here: {blocked}; this Python: {here}"


def here_blocker() -> str | None:
    """Why this interpreter cannot run NPU jobs (None: it can); probes in a worker if torch_npu is installed."""
    if importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed"
    result = call("diagnose.toolchain.npu:probe", {}, timeout_s=PROBE_TIMEOUT_S, user_code=False)
    if not result.ok:
        return f"probing torch_npu failed ({result.failure.kind}: {result.failure.message})"
    return result.value["npu"]


def npu_placement(root: Path | None = None) -> tuple[Placement | None, str]:
    """Where NPU jobs run here (see the module docstring); `root` is the cache holding the toolchain's record."""
    record = find_record("ascend", root)
    if toolchain_blocker(record) is None:
        return decide(record, None)
    return decide(record, here_blocker())


def probe(payload: dict) -> dict:
    """Worker entry: {"npu": None or why this interpreter cannot run NPU jobs, "devices": count}."""
    reason = npu_blocker()
    if reason is None and importlib.util.find_spec("triton.backends.ascend") is None:
        reason = "triton here is not triton-ascend (no NPU backend)"
    devices = 0
    if reason is None:
        import torch  # deferred: torch is heavy

        devices = int(torch.npu.device_count())
    return {"npu": reason, "devices": devices}
