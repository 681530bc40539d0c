"""Devices a worker can run on: `cuda` (torch), `npu` (torch_npu) and `cpu` (Triton's interpreter).

The one place that knows how the devices differ:
- `KINDS`: per device, the torch module that owns its events and synchronize (`torch.cuda`,
  `torch.npu`), the extension that must be imported before torch knows the device (`torch_npu`),
  and whether Triton runs interpreted there;
- `Placement`: where one device's jobs run (the interpreter, its extra environment, the interpreter
  switch); which placement a device gets here is `diagnose.toolchain.placement`'s, since for the
  `npu` device it is a toolchain's Python.

The worker-side helpers below (`torch_device`, `synchronize`, `events`, ...) import torch lazily.
"""

from __future__ import annotations

import importlib.metadata
import platform
from dataclasses import dataclass

from diagnose.errors import UsageError


@dataclass(frozen=True)
class DeviceKind:
    """What differs between devices: `events` is the torch module of the device's events and
    synchronize (None: nothing is timed), `extension` the module that registers the device with
    torch, `interpreted` whether Triton's interpreter runs the kernels (on CPU tensors)."""

    name: str
    events: str | None
    extension: str | None = None
    interpreted: bool = False


KINDS: dict[str, DeviceKind] = {
    "cuda": DeviceKind("cuda", events="cuda"),
    "npu": DeviceKind("npu", events="npu", extension="torch_npu"),
    "cpu": DeviceKind("cpu", events=None, interpreted=True),
}
DEVICES = tuple(KINDS)


@dataclass(frozen=True)
class Placement:
    """Where one device's jobs run: `python` (None: this interpreter), extra environment for the
    worker, and whether Triton is interpreted. `runner_options()` are `diagnose.runtime.runner.call`'s."""

    device: str
    python: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    interpret: bool = False

    def runner_options(self) -> dict:
        return {"python": self.python, "env": dict(self.env) or None, "interpret": self.interpret}


def kind(device: str) -> DeviceKind:
    if device not in KINDS:
        raise UsageError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    return KINDS[device]


def interpreted(device: str) -> bool:
    return device in KINDS and KINDS[device].interpreted


def timed(device: str) -> bool:
    return device in KINDS and KINDS[device].events is not None


# ---------------------------------------------------------------- worker side (imports torch)


def torch_device(device: str) -> str:
    """The torch device string a worker moves tensors to (the interpreter works on CPU tensors);
    imports the device's extension first, so that torch knows the device."""
    extension = kind(device).extension
    if extension:
        __import__(extension)
    return device


def events(device: str):
    """The torch module with the device's `Event` and `synchronize` (`torch.cuda`, `torch.npu`)."""
    import torch  # deferred: torch is heavy

    module = kind(device).events
    if module is None:
        raise UsageError(f"device {device} has no device events: nothing is timed there")
    torch_device(device)
    return getattr(torch, module)


def synchronize(device: str) -> None:
    if timed(device):
        events(device).synchronize()


def empty_cache(device: str) -> None:
    """Give the caching allocator's free blocks back (between timed groups)."""
    if timed(device):
        events(device).empty_cache()


def l2_bytes(device: str) -> int:
    """The device's L2 size as torch reports it (0 when it does not: the flush uses its minimum)."""
    if not timed(device):
        return 0
    props = events(device).get_device_properties(0)
    return int(getattr(props, "L2_cache_size", 0) or 0)


def poison_allocator(device: str, nbytes: int) -> None:
    """Fill and free a block so that memory a kernel forgets to write reads as NaN (0xFF bytes).

    A caching allocator (CUDA, NPU) or the C heap hands the block back to the next allocation of a
    similar size; an output that a candidate never writes then fails correctness instead of passing
    on zeros or on a previous call's result.
    """
    import torch  # deferred: torch is heavy

    if nbytes <= 0:
        return
    block = torch.empty(nbytes, dtype=torch.uint8, device=torch_device(device))
    block.fill_(0xFF)
    synchronize(device)
    del block


def versions(device: str) -> dict[str, str]:
    """Library versions and the device name, for the verdict."""
    import torch  # deferred: torch is heavy
    import triton  # deferred: triton is heavy

    info = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info["device_name"] = props.name
        info["cuda"] = str(torch.version.cuda)
        info["capability"] = f"{props.major}.{props.minor}"
    elif device == "npu":
        info["device_name"] = str(events("npu").get_device_name(0))
        for dist in ("torch-npu", "triton-ascend"):
            try:
                info[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                pass  # not installed here: the version is simply not reported
    else:
        info["device_name"] = f"cpu ({platform.machine()}), Triton interpreter"
    return info
