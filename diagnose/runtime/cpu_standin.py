"""Running code written for a GPU on a machine without one: a CPU stand-in for the device.

Real kernel modules and their tests assume a GPU from the first line: `torch.randn(..., device="cuda")`,
`.cuda()`, `torch.cuda.get_device_properties(0).multi_processor_count`, `with torch.cuda.device(x.device):`,
`triton.runtime.driver.active.get_current_target()`, and `@triton.autotune`, which asks the driver for a
benchmarker. On a machine without a GPU, Triton's interpreter (`TRITON_INTERPRET=1`) runs the kernels on
CPU tensors; `install(target)` makes the rest of that code run too, in a worker or capture process only:

- tensors: a torch function mode sends every `device="cuda..."`, `.cuda()` and `.to("cuda")` to the CPU,
  and answers `x.is_cuda` with True (host code asserts it); `x.device` still says `cpu`;
- `torch.cuda`: device queries answer for the target (an H100-class sm_90 by default: its SM count,
  capability and name, marked as a stand-in; one device), and streams, events, `device(...)`, `synchronize`, seeding
  and memory statistics do nothing; `torch.cuda.is_available()` still says False, so code that asks
  takes its CPU path;
- Triton's driver: through Triton's own seam, `driver.set_active`, a driver that answers for the target,
  puts tensors on the CPU, and benchmarks nothing: asked to time the autotuner's configs, it ranks them
  in the order they are listed, so the first config is the one used, every time; it is also the target
  backend's driver in `triton.backends.backends`, and active, for libraries that ask each backend whether
  Triton is usable here (vLLM's `triton_utils`);
- Triton 3.6's interpreter passes a Python `float` argument to the kernel as a Python float, where the
  compiler passes an fp32 scalar (so `eps.to(tl.float32)` fails only in the interpreter): such arguments
  are given as fp32 scalars, as the compiler does (`_implicit_cvt` is the interpreter's one conversion of
  launch arguments, and it has no hook; replaced only where it lacks the case);
- libdevice math (`rsqrt`, `tanh`, `pow`, `erf`, ...) is computed with numpy
  (`diagnose/runtime/interpreter_libdevice.py`);
- the interpreter's kernels are `JITFunction`s too, and a launch returns a kernel that launches again
  with `kernel[grid](*args)`, for launchers that read a compiled kernel's shape (FlagGems' `LibEntry`;
  `diagnose/runtime/interpreted_jit.py`).

Nothing here runs in the parent process, and nothing here is timed: a CPU run is never a measurement.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from types import SimpleNamespace
from typing import Any

from diagnose.runtime import interpreter_libdevice
from diagnose.targets import lookup

STANDIN_NAME = "NVIDIA H100 80GB HBM3 (diagnose CPU stand-in)"


def _is_cuda(device: Any) -> bool:
    import torch  # deferred: torch is heavy

    if isinstance(device, str):
        return device.startswith("cuda")
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, int) and not isinstance(device, bool)  # `.to(0)`, `device=0`: a GPU index


def _tensor_mode():
    import torch  # deferred: torch is heavy
    from torch.overrides import TorchFunctionMode  # deferred: torch is heavy

    is_cuda = next(vars(c)["is_cuda"] for c in torch.Tensor.__mro__ if "is_cuda" in vars(c))

    class CudaToCpu(TorchFunctionMode):
        """Every tensor that code meant for a GPU lands on the CPU, and says it is a GPU tensor when asked
        `x.is_cuda` (host code asserts it before a launch); `x.device` stays the truth."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__self__", None) is is_cuda:
                return True
            kwargs = dict(kwargs or {})
            if "device" in kwargs and _is_cuda(kwargs["device"]):
                kwargs["device"] = "cpu"
            if func is torch.Tensor.cuda or func is torch.Tensor.pin_memory:
                return args[0]
            if func is torch.Tensor.to and len(args) > 1 and _is_cuda(args[1]):
                args = (args[0], "cpu", *args[2:])
            return func(*args, **kwargs)

    return CudaToCpu()


class StandInEvent:
    """`torch.cuda.Event` on the host clock (nothing on a CPU run is a measurement)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.at = None

    def record(self, stream=None):
        self.at = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end: "StandInEvent") -> float:
        return ((end.at or 0.0) - (self.at or 0.0)) * 1e3


class StandInStream:
    """`torch.cuda.Stream`: work is done when it is issued."""

    cuda_stream = 0
    device = None

    def __init__(self, device=None, priority: int = 0, **kwargs):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or StandInEvent()
        event.record()
        return event

    def query(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Device(contextlib.nullcontext):
    """`with torch.cuda.device(x.device):` selects nothing; `torch.cuda.device(i).idx` is the index asked
    for (unsloth keys its per-device stream table on it)."""

    def __init__(self, device=None):
        super().__init__()
        if isinstance(device, str):
            index = device.partition(":")[2] or 0
        else:
            index = device.index if hasattr(device, "type") else device  # a torch.device, or an int
        self.idx = int(index) if index is not None else 0


def _capability(target) -> tuple[int, int]:
    """The compute capability the stand-in reports: the target's, or sm_90's for a non-CUDA target."""
    return divmod(target.arch, 10) if isinstance(target.arch, int) else (9, 0)


def _properties(target) -> SimpleNamespace:
    major, minor = _capability(target)
    return SimpleNamespace(
        name=STANDIN_NAME,
        major=major,
        minor=minor,
        multi_processor_count=target.sm_count,
        total_memory=80 * 2**30,
        warp_size=target.warp_size or 32,
        max_threads_per_multi_processor=2048,
        regs_per_multiprocessor=target.regs_per_sm or 65536,
        max_shared_memory_per_block_optin=target.shared_per_block,
        L2_cache_size=target.l2_bytes,
        is_integrated=False,
        is_multi_gpu_board=False,
        uuid="diagnose-cpu-standin",
        gcnArchName=target.arch if target.is_amd else "",
    )


def patch_torch_cuda(target) -> None:
    import torch  # deferred: torch is heavy

    cuda = torch.cuda
    props = _properties(target)
    stream = StandInStream()
    values = {
        "device_count": lambda: 1,  # device 0, the one current_device names (per-device tables index it)
        "current_device": lambda: 0,
        "get_device_properties": lambda device=None: props,
        "get_device_capability": lambda device=None: (props.major, props.minor),
        "get_device_name": lambda device=None: props.name,
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: stream,
        "default_stream": lambda device=None: stream,
        "stream": lambda s=None: contextlib.nullcontext(s),
        "Stream": StandInStream,
        "Event": StandInEvent,
        "device": _Device,
        "set_device": lambda device: None,
        "manual_seed": lambda seed: None,
        "manual_seed_all": lambda seed: None,
        "seed": lambda: None,
        "seed_all": lambda: None,
        "empty_cache": lambda: None,
        "is_bf16_supported": lambda including_emulation=True: True,
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
        "init": lambda: None,
    }
    for name, value in values.items():
        setattr(cuda, name, value)
    # The raw handle of the current stream, which host code hands to its own launchers (unsloth's table of
    # streams per device): the default stream's, 0, where this torch has no CUDA to ask.
    if not hasattr(torch._C, "_cuda_getCurrentRawStream"):
        torch._C._cuda_getCurrentRawStream = lambda device=None: 0


# What a stand-in event reports between two records, in ms: long enough that `triton.testing.do_bench`
# runs a config the fewest times it can (one run, its five-run estimate, one warmup, one repeat).
ELAPSED_MS = 1e6


class DeviceInterface:
    """What `triton.testing.do_bench` asks of the device module (`torch.cuda` on NVIDIA): FlagGems'
    `libtuner` passes `warmup`/`rep`, so Triton's autotuner benches its configs through `do_bench`
    instead of the driver's benchmarker. A synchronize that waits for nothing, and events that all
    report the same long time: every config ties and the first listed wins, as with the stand-in's
    benchmarker."""

    class Event(StandInEvent):
        def elapsed_time(self, end: StandInEvent) -> float:
            return ELAPSED_MS

    @staticmethod
    def synchronize(device=None) -> None:
        """Work is done when it is issued (as `StandInStream` says)."""


def standin_driver(target):
    """A Triton driver for `target` that runs nothing: for code that asks the driver questions."""
    from triton.backends.driver import DriverBase  # deferred: triton is heavy

    order = itertools.count()

    def benchmarker(kernel_call, quantiles=None, **kwargs):
        # Configs are ranked in the order they are tried, which is the order they are listed.
        rank = float(next(order))
        return [rank, rank, rank] if quantiles else rank

    class Utils:
        def get_device_properties(self, device=None) -> dict:
            return {
                "multiprocessor_count": target.sm_count,
                "max_shared_mem": target.shared_per_block,
                "max_num_regs": target.regs_per_sm or 65536,
                "warpSize": target.warp_size or 32,
                "sm_clock_rate": 1980000,
                "mem_clock_rate": 2619000,
                "mem_bus_width": 5120,
            }

    class StandInDriver(DriverBase):
        def __init__(self):
            self.utils = Utils()

        @classmethod
        def is_active(cls):
            return True

        def get_current_target(self):
            return target.gpu_target()

        def get_active_torch_device(self):
            import torch  # deferred: torch is heavy

            return torch.device("cpu")

        def get_current_device(self):
            return 0

        def get_current_stream(self, device=None):
            return 0

        def set_current_device(self, device):
            pass

        def get_device_capability(self, device=None):
            return _capability(target)

        def map_python_to_cpp_type(self, ty):
            raise NotImplementedError("the CPU stand-in driver does not launch")

        def get_benchmarker(self):
            return benchmarker

        def get_device_interface(self):
            return DeviceInterface

        def get_empty_cache_for_benchmark(self):
            import torch  # deferred: torch is heavy

            return torch.empty(1)

        def clear_cache(self, cache):
            pass

    return StandInDriver()


BACKEND_OF = {"cuda": "nvidia", "hip": "amd"}


def register_backend_driver(driver_class, backend: str) -> None:
    """Make the stand-in the driver of the target's backend in `triton.backends.backends`.

    Libraries decide whether Triton is usable by asking each installed backend's driver `is_active()`
    (vLLM's `triton_utils` swaps in a placeholder `triton` module that has no `next_power_of_2` when none
    answers yes), and a CUDA driver answers with `torch.cuda.is_available()`, which the stand-in keeps
    False. The backend of the target is the one that is active here; the others stay as installed."""
    from triton import backends  # deferred: triton is heavy

    name = BACKEND_OF.get(backend, backend)
    if name in backends.backends:
        backends.backends[name] = dataclasses.replace(backends.backends[name], driver=driver_class)


def patch_interpreter_floats() -> None:
    """Give float launch arguments to interpreted kernels as fp32 scalars, as compiled kernels get them."""
    import numpy as np  # deferred: numpy is heavy
    import triton.language as tl  # deferred: triton is heavy
    from triton.runtime import interpreter  # deferred: triton is heavy

    convert = interpreter._implicit_cvt
    if getattr(convert, "diagnose_floats", False):
        return
    probe = convert(1.5)
    if hasattr(probe, "to"):  # this Triton converts floats itself
        return

    def implicit_cvt(arg):
        if isinstance(arg, float):
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return convert(arg)

    implicit_cvt.diagnose_floats = True
    interpreter._implicit_cvt = implicit_cvt


def install(target_name: str = "cuda:sm90", interpreter: bool = True) -> None:
    """Make GPU code run on the CPU in this process (a worker's or a capture's; never the parent's).
    `interpreter`: also mend Triton's interpreter (only where it runs the kernels)."""
    from triton.runtime.driver import driver  # deferred: triton is heavy

    target = lookup(target_name)
    patch_torch_cuda(target)
    _tensor_mode().__enter__()
    standin = standin_driver(target)
    driver.set_active(standin)
    register_backend_driver(type(standin), target.gpu_target().backend)
    if interpreter:
        from diagnose.runtime import interpreted_jit  # deferred: imports triton and numpy

        patch_interpreter_floats()
        interpreter_libdevice.install()
        interpreted_jit.install()
