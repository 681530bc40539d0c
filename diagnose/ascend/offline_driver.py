"""A stand-in for triton-ascend's NPU driver, so user files import and launch-capture without an NPU.

Without CANN no driver is active, and `triton.runtime.driver.active` raises on first use ("0 active
drivers"). User code touches it before any kernel compiles: `@triton.autotune` asks for the
benchmarker at decoration time, and Ascend code sizes its grid from
`driver.active.utils.get_device_properties(dev)["num_vectorcore" | "num_aicore"]`.
`offline_driver(target)` sets, through Triton's own `driver.set_active`, a driver that answers those
questions from the target registry and refuses to launch or time anything. Workers only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from diagnose.targets import Target

try:
    from triton.backends.driver import DriverBase
except ImportError:  # the main environment: the module is only used inside the toolchain's workers
    DriverBase = object  # type: ignore[misc,assignment]


class OfflineUtils:
    """The part of `NPUUtils` user code reads: core counts of the target."""

    def __init__(self, target: Target):
        self.target = target

    def get_device_properties(self, device=None) -> dict:
        # max_shared_mem = 1 is what triton-ascend's own driver reports (it does not limit it).
        return {"max_shared_mem": 1, "num_aicore": self.target.sm_count, "num_vectorcore": self.target.vector_cores}

    def get_aicore_num(self) -> int:
        return self.target.sm_count

    def get_aivector_core_num(self) -> int:
        return self.target.vector_cores

    def get_arch(self) -> str:
        return str(self.target.arch)


class OfflineNpuDriver(DriverBase):
    """Answers target and core-count questions for `target`; launching or timing raises."""

    def __init__(self, target: Target):
        self.target = target
        self.utils = OfflineUtils(target)

    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self):
        return self.target.gpu_target()

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_active_torch_device(self):
        import torch  # deferred: torch is heavy

        return torch.device("cpu")

    def get_benchmarker(self):
        def refuse(*args, **kwargs):
            raise RuntimeError("diagnose compiles offline for an NPU here: nothing can be timed")

        return refuse

    def get_device_interface(self):
        raise RuntimeError("diagnose compiles offline for an NPU here: there is no device")


@contextlib.contextmanager
def offline_driver(target: Target) -> Iterator[OfflineNpuDriver]:
    """Make the offline driver Triton's active one for the duration of the block."""
    from triton.runtime.driver import driver  # deferred: the driver module starts Triton's backends

    previous = driver.active
    stand_in = OfflineNpuDriver(target)
    driver.set_active(stand_in)
    try:
        yield stand_in
    finally:
        driver.set_active(previous)
