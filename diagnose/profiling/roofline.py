"""The roofline: how far a measured time is from the bound that bytes and FLOPs put on it.

For one input group a task must move at least `bytes` (every input read once, every output written
once) and do `flops` floating-point operations (`work.py` counts both). On a device whose roof is
`bytes_per_s` (measured copy bandwidth) and `flops_per_s` (measured matmul rate for the task's
dtype), no kernel runs faster than

    bound = max(bytes / bytes_per_s, flops / flops_per_s)

`fraction = bound / measured` is the share of the roofline reached (1.0 = at the roof). The task is
memory-bound when its arithmetic intensity `flops / bytes` lies below the ridge point
`flops_per_s / bytes_per_s` (the memory term is the larger), compute-bound otherwise. This says what
the *task* is bound by at best; what holds the *kernel* back is `classify.py`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.profiling.ceilings import Ceilings

# `Work` and `Roof` are records of the report (`diagnose/records.py`); this module computes with them.
from diagnose.records import Record, Roof, Work

MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"


def roof_for(ceilings: Ceilings, dtype: str) -> Roof:
    if not ceilings.copy_bytes_per_s:
        raise ValueError(f"{ceilings.device}: no memory bandwidth known, so no roofline")
    return Roof(ceilings.copy_bytes_per_s, ceilings.flops_per_s(dtype), dtype, ceilings.measured)


@dataclass(frozen=True)
class RooflinePosition(Record):
    """One timed variant (candidate, initial, eager, compile) of one group against the roof."""

    group: str
    variant: str
    time_s: float
    memory_s: float
    compute_s: float
    bound_s: float
    fraction: float
    regime: str
    intensity: float
    ridge: float | None
    achieved_bytes_per_s: float
    achieved_flops_per_s: float


def bound(work: Work, roof: Roof) -> tuple[float, float, float]:
    """(memory seconds, compute seconds, bound seconds): the two terms and the larger."""
    memory = work.bytes / roof.bytes_per_s
    compute = work.flops / roof.flops_per_s if (work.flops and roof.flops_per_s) else 0.0
    return memory, compute, max(memory, compute)


def regime(work: Work, roof: Roof) -> str:
    memory, compute, _ = bound(work, roof)
    return COMPUTE_BOUND if compute > memory else MEMORY_BOUND


def position(work: Work, roof: Roof, time_s: float, variant: str = "candidate") -> RooflinePosition:
    """Where a measured time lies against the roof."""
    if time_s <= 0:
        raise ValueError(f"time must be positive, got {time_s}")
    memory, compute, best = bound(work, roof)
    return RooflinePosition(
        group=work.group,
        variant=variant,
        time_s=time_s,
        memory_s=memory,
        compute_s=compute,
        bound_s=best,
        fraction=best / time_s,
        regime=COMPUTE_BOUND if compute > memory else MEMORY_BOUND,
        intensity=work.intensity,
        ridge=roof.ridge,
        achieved_bytes_per_s=work.bytes / time_s,
        achieved_flops_per_s=work.flops / time_s,
    )
