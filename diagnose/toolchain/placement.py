"""Where a device's jobs run here: this interpreter, or a toolchain's.

`placement(device)` gives a `Placement` (`diagnose.runtime.devices`: the interpreter, its extra
environment, the interpreter switch). `cuda` and `cpu` run in this interpreter; `cpu` sets
`TRITON_INTERPRET=1` in the worker's environment before anything imports triton, and nothing is
timed there. `npu` runs in an interpreter where torch_npu imports and sees an NPU: the Ascend
toolchain's (`diagnose toolchain setup ascend`) or this one (`diagnose.toolchain.npu`).

`available(device)` says whether a device can be used here and, if not, why, in one line;
`require(device)` raises `UsageError` with that line (exit code 2, as for any unusable option value)
and otherwise returns the placement. Only the question about cuda imports torch.
"""

from __future__ import annotations

from diagnose.errors import UsageError
from diagnose.runtime.devices import DEVICES, KINDS, Placement
from diagnose.toolchain.npu import npu_placement


def placement(device: str) -> tuple[Placement | None, str]:
    """(where the device's jobs run, "") or (None, why not, in one line)."""
    if device not in KINDS:
        return None, f"unknown device {device!r}; choose one of {', '.join(DEVICES)}"
    if device == "cpu":
        return Placement("cpu", interpret=True), ""
    if device == "npu":
        return npu_placement()
    import torch  # deferred: torch is heavy; only the question about cuda needs it

    if not torch.cuda.is_available():
        return None, "device cuda is not available here (no CUDA GPU visible to torch); use --device cpu"
    return Placement("cuda"), ""


def available(device: str) -> tuple[bool, str]:
    """Whether the device can be used here, and if not, why (one line)."""
    where, why = placement(device)
    return where is not None, why


def require(device: str) -> Placement:
    where, why = placement(device)
    if where is None:
        raise UsageError(why)
    return where
