"""Devices a worker can run on: `cuda` (torch), `npu` (torch_npu) and `cpu` (Triton's interpreter).

`cpu` means the Triton kernels run in Triton's interpreter on CPU tensors; the runner sets
`TRITON_INTERPRET=1` in that worker's environment before anything imports triton. Nothing is timed
there. Worker-side helpers import torch lazily so the parent can ask `available` cheaply.
"""

from __future__ import annotations

import importlib.util

from diagnose.errors import UsageError

DEVICES = ("cuda", "npu", "cpu")


def interpreted(device: str) -> bool:
    return device == "cpu"


def timed(device: str) -> bool:
    return device in ("cuda", "npu")


def available(device: str) -> tuple[bool, str]:
    """Whether the device can be used here, and if not, why (one line)."""
    if device not in DEVICES:
        return False, f"unknown device {device!r}; choose one of {', '.join(DEVICES)}"
    if device == "cpu":
        return True, ""
    if device == "npu":
        if importlib.util.find_spec("torch_npu") is None:
            return False, "device npu needs torch_npu, which is not installed here"
        return True, ""
    import torch

    if not torch.cuda.is_available():
        return False, "device cuda is not available here (no CUDA GPU visible to torch); use --device cpu"
    return True, ""


def require(device: str) -> None:
    ok, why = available(device)
    if not ok:
        raise UsageError(why)


def torch_device(device: str) -> str:
    """The torch device string a worker moves tensors to (the interpreter works on CPU tensors)."""
    if device == "npu":
        import torch_npu  # noqa: F401 - registers the npu device with torch

    return device


def synchronize(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
    elif device == "npu":
        torch.npu.synchronize()


def poison_allocator(device: str, nbytes: int) -> None:
    """Fill and free a block so that memory a kernel forgets to write reads as NaN (0xFF bytes).

    A caching allocator (CUDA, NPU) or the C heap hands the block back to the next allocation of a
    similar size; an output that a candidate never writes then fails correctness instead of passing
    on zeros or on a previous call's result.
    """
    import torch

    if nbytes <= 0:
        return
    block = torch.empty(nbytes, dtype=torch.uint8, device=torch_device(device))
    block.fill_(0xFF)
    synchronize(device)
    del block


def versions(device: str) -> dict[str, str]:
    """Library versions and the device name, for the verdict."""
    import platform

    import torch
    import triton

    info = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info["device_name"] = props.name
        info["cuda"] = str(torch.version.cuda)
        info["capability"] = f"{props.major}.{props.minor}"
    elif device == "npu":
        info["device_name"] = str(torch.npu.get_device_name(0))
    else:
        info["device_name"] = f"cpu ({platform.machine()}), Triton interpreter"
    return info
