"""Where a device's jobs run here: this interpreter, or a toolchain's.

`placement(device)` gives a `Placement` (`diagnose.runtime.devices`: the interpreter, its extra
environment, the interpreter switch). `cuda` and `cpu` run in this interpreter; `cpu` sets
`TRITON_INTERPRET=1` in the worker's environment before anything imports triton, and nothing is
timed there. `npu` runs in an interpreter where torch_npu imports and sees an NPU: the Ascend
toolchain's (`diagnose toolchain setup ascend`) or this one (`diagnose.toolchain.npu`).

`available(device)` says whether a device can be used here and, if not, why, in one line;
`require(device)` raises `UsageError` with that line (exit code 2, as for any unusable option value)
and otherwise returns the placement. The question about cuda goes to the NVIDIA driver first
(`diagnose.toolchain.nvml`: milliseconds); only where the driver cannot be asked does it import torch.
"""

from __future__ import annotations

from diagnose.errors import UsageError
from diagnose.runtime.devices import DEVICES, KINDS, Placement
from diagnose.toolchain import nvml
from diagnose.toolchain.npu import npu_placement


def placement(device: str) -> tuple[Placement | None, str]:
    """(where the device's jobs run, "") or (None, why not, in one line)."""
    if device not in KINDS:
        return None, f"unknown device {device!r}; choose one of {', '.join(DEVICES)}"
    if device == "cpu":
        return Placement("cpu", interpret=True), ""
    if device == "npu":
        return npu_placement()
    listed = nvml.gpus()
    if listed is None or (listed and not nvml.torch_cuda()):  # a ROCm torch's `cuda` is HIP: torch answers
        import torch  # deferred: torch is heavy, and starting CUDA here costs seconds before the first job

        listed = 1 if torch.cuda.is_available() else 0
    if not listed:
        return None, "device cuda is not available here (no CUDA GPU visible); use --device cpu"
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
