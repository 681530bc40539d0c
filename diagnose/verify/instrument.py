"""Worker-side instrumentation of a candidate: counting its Triton launches, turning them into no-ops
(ghost replay), noting the stream each launch goes to (work escaping the timed stream), and noticing
calls into the reference `Model`.

Triton's own launch path is the seam: `kernel[grid](...)` calls `kernel.run(...)` (for `JITFunction` and
the interpreter's `InterpretedFunction` alike, and `Autotuner.run` calls its inner function's `run`), so
an instance attribute `run` wraps exactly the launches of that kernel, in both modes, without touching
Triton's classes. The user's kernels are found among live objects after the file is imported; Triton's
own library functions are left alone.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Iterator


@dataclass
class LaunchLog:
    """Mutable per-job counters (one per worker process, never shared)."""

    launches: dict[str, int] = field(default_factory=dict)
    reference_calls: int = 0

    def total(self) -> int:
        return sum(self.launches.values())


def user_kernels() -> list:
    """Every live Triton kernel object defined outside the triton package."""
    from diagnose.task.replay import user_kernels as live

    return live()


def kernel_name(kernel) -> str:
    return getattr(getattr(kernel, "fn", None), "__name__", repr(kernel))


def count_launches(kernels: list, log: LaunchLog) -> None:
    for kernel in kernels:
        original = kernel.run
        name = kernel_name(kernel)

        def counted(*args, _original=original, _name=name, **kwargs):
            log.launches[_name] = log.launches.get(_name, 0) + 1
            return _original(*args, **kwargs)

        kernel.run = counted


def ghost(kernels: list, log: LaunchLog) -> None:
    """Turn every launch into a no-op that is still counted."""
    for kernel in kernels:
        name = kernel_name(kernel)

        def skipped(*args, _name=name, **kwargs):
            log.launches[_name] = log.launches.get(_name, 0) + 1
            return None

        kernel.run = skipped


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
