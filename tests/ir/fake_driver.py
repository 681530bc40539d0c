"""A driver that is never active and never launches: lets `JITFunction.warmup` compile offline.

With it set active, the JIT's own path (binder, `_pack_args`, `_do_compile`) runs for a chosen
target on a machine without a GPU, which is what the hash-equality tests compare against.
"""

from __future__ import annotations

import contextlib

from triton.backends.driver import DriverBase


class FakeDriver(DriverBase):
    def __init__(self, target):
        self.target = target

    @classmethod
    def is_active(cls):
        return False

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def map_python_to_cpp_type(self, ty):
        raise NotImplementedError("FakeDriver does not launch")

    def get_benchmarker(self):
        raise NotImplementedError("FakeDriver does not launch")


@contextlib.contextmanager
def fake_driver(target, *jit_functions):
    """Make `target` the active driver's target; clear the kernels' per-device caches around it."""
    from triton.runtime.driver import driver

    saved = driver._active
    driver.set_active(FakeDriver(target))
    for fn in jit_functions:
        fn.device_caches.clear()
    try:
        yield
    finally:
        driver._active = saved
        for fn in jit_functions:
            fn.device_caches.clear()
