"""Worker-side instrumentation of a candidate: counting its Triton launches, turning them into no-ops
(ghost replay), noting the stream each launch goes to (work escaping the timed stream), and noticing
calls into the reference `Model`.

Triton's own launch path is the seam: `kernel[grid](...)` calls `kernel.run(...)` (for `JITFunction` and
the interpreter's `InterpretedFunction` alike, and `Autotuner.run` / `Heuristics.run` call their inner
function's `run`). `watch_launches` wraps `run` on those two classes for the whole worker, so a kernel
made after the file was imported (by `triton.jit` inside `ModelNew.__init__`, or inside a function
on each call) is counted like one defined at module level. A launch counts only once `run` has
returned: a launch that raised (and a `try: kernel[...] except: return torch_op(x)` fallback behind
it) counts nothing. Kernels of the triton package itself are left alone, and so is `warmup` (a
compile, not a launch). `intact` says whether the wrapping is still in place after the candidate ran:
a candidate that restores Triton's own `run` to hide its launches from the ghost replay fails.

A CUDA graph's replay launches the kernels captured into it without calling `run` again:
`watch_graph_replays` counts, at each replay, the launches made while that graph was captured, so an
honest candidate that captures its Triton launches once and replays them launches on every call. In a
ghost run the captured launches were no-ops, so the graph holds nothing and its replays compute nothing.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Iterator

from diagnose.task.replay import user_kernels as live


@dataclass
class LaunchLog:
    """Mutable per-job counters (one per worker process, never shared)."""

    launches: dict[str, int] = field(default_factory=dict)
    reference_calls: int = 0

    def total(self) -> int:
        return sum(self.launches.values())


def user_kernels() -> list:
    """Every live Triton kernel object defined outside the triton package."""
    return live()


def kernel_name(kernel) -> str:
    return getattr(getattr(kernel, "fn", None), "__name__", repr(kernel))


def kernel_classes() -> list[type]:
    """Triton's classes whose `run` launches one kernel: `JITFunction`, and the interpreter's."""
    from triton.runtime.jit import JITFunction, KernelInterface  # deferred: triton is heavy

    try:
        from triton.runtime.interpreter import InterpretedFunction  # deferred: triton is heavy
    except ImportError:  # pragma: no cover - older layouts
        return [JITFunction]
    # Every class of the interpreter's kernels that defines a `run`: under the CPU stand-in they are
    # `JITFunction`s with a `run` of their own, over the interpreter's (diagnose/runtime/interpreted_jit.py).
    own = [c for c in InterpretedFunction.__mro__ if "run" in vars(c) and c is not KernelInterface]
    return list(dict.fromkeys([JITFunction, *own]))


def is_library(kernel) -> bool:
    module = getattr(getattr(kernel, "fn", None), "__module__", "") or ""
    return module.startswith("triton")


def watch_launches(log: LaunchLog, ghost: bool = False) -> dict[type, Callable]:
    """From now on in this process, every launch of a user kernel is counted in `log` once it returned,
    or (`ghost`) counted and skipped. Returns the wrappers installed, for `intact`."""
    installed: dict[type, Callable] = {}
    for cls in kernel_classes():
        original = cls.run

        def run(self, *args, _original=original, **kwargs):
            if kwargs.get("warmup") or is_library(self):
                return _original(self, *args, **kwargs)
            name = kernel_name(self)
            if ghost:
                log.launches[name] = log.launches.get(name, 0) + 1
                return None
            result = _original(self, *args, **kwargs)
            log.launches[name] = log.launches.get(name, 0) + 1  # after: a launch that raised is none
            return result

        cls.run = run
        installed[cls] = run
    return installed


def watch_graph_replays(log: LaunchLog, graph_class: type | None = None) -> None:
    """From now on in this process, each replay of a CUDA graph (`torch.cuda.CUDAGraph`, or `graph_class`)
    counts in `log` the user-kernel launches made between its `capture_begin` and `capture_end`."""
    if graph_class is None:
        import torch  # deferred: torch is heavy

        graph_class = getattr(torch.cuda, "CUDAGraph", None)
        if graph_class is None:
            return
    begun: dict[int, dict[str, int]] = {}
    captured: dict[int, dict[str, int]] = {}
    begin, end, replay = graph_class.capture_begin, graph_class.capture_end, graph_class.replay

    def capture_begin(self, *args, **kwargs):
        begun[id(self)] = dict(log.launches)
        return begin(self, *args, **kwargs)

    def capture_end(self, *args, **kwargs):
        result = end(self, *args, **kwargs)
        before = begun.pop(id(self), {})
        captured[id(self)] = {
            name: count - before.get(name, 0) for name, count in log.launches.items() if count > before.get(name, 0)
        }
        return result

    def replayed(self, *args, **kwargs):
        result = replay(self, *args, **kwargs)
        for name, count in captured.get(id(self), {}).items():
            log.launches[name] = log.launches.get(name, 0) + count
        return result

    graph_class.capture_begin, graph_class.capture_end, graph_class.replay = capture_begin, capture_end, replayed


def intact(installed: dict[type, Callable]) -> bool:
    """Whether `watch_launches`'s wrappers are still what Triton's kernels launch through: on the
    classes, and not shadowed by a `run` of a kernel's own."""
    if not all(cls.__dict__.get("run") is run for cls, run in installed.items()):
        return False
    return not any("run" in vars(kernel) for kernel in user_kernels())


@contextmanager
def streams_noted(kernels: list, current_stream: Callable[[], Any]) -> Iterator[list]:
    """Within: each launch of `kernels` appends the stream current at the launch (the one Triton launches
    on) to the yielded list. The kernels' own `run` comes back afterwards, so timed calls outside pay
    nothing for it."""
    streams: list = []
    before = {id(kernel): kernel.__dict__.get("run") for kernel in kernels}
    for kernel in kernels:

        def noted(*args, _original=kernel.run, **kwargs):
            streams.append(current_stream())
            return _original(*args, **kwargs)

        kernel.run = noted
    try:
        yield streams
    finally:
        for kernel in kernels:
            if before[id(kernel)] is None:
                del kernel.run
            else:
                kernel.run = before[id(kernel)]


def trap_reference(module: ModuleType, log: LaunchLog) -> None:
    """Count constructions and calls of the candidate file's own `Model` (the reference)."""
    reference = getattr(module, "Model", None)
    if not isinstance(reference, type):
        return
    original_init, original_forward = reference.__init__, reference.forward

    def init(self, *args, **kwargs):
        log.reference_calls += 1
        original_init(self, *args, **kwargs)

    def forward(self, *args, **kwargs):
        log.reference_calls += 1
        return original_forward(self, *args, **kwargs)

    reference.__init__, reference.forward = init, forward
