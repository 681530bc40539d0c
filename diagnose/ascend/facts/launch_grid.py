"""LaunchGrid: the example launch's grid against the cores the kernel runs on.

## What it reads
The grid of the launch (from the example spec or the captured `ModelNew.forward` launch; nothing
when it is not known) and the kernel's core kind (`KernelMode`: vector cores for a vector-only
kernel, AI cores for one that uses `tl.dot`), from the target registry.

Each program is bound to a physical core; programs beyond the core count run in further rounds,
each paying launch and initialisation again (the fix: grid = cores, loop over blocks inside
the kernel). The runtime refuses a grid over 65535 programs (`coreDim ... can't be greater than
UINT16_MAX`).

## Kinds
`missed` when there are more programs than cores (`rounds` > 1) or more than 65535 (`over_limit`);
`analysis` when fewer programs than cores leave some idle (`idle_cores`); `passed` when they
match. Arguments: `grid`, `programs`, `cores`, `core_kind`, `rounds`.
"""

from __future__ import annotations

from diagnose.ascend.facts.context import AscendFactContext
from diagnose.records import Evidence

CORE_DIM_LIMIT = 65535


def launch_grid(ctx: AscendFactContext) -> list[Evidence]:
    grid = ctx.kernel.get("grid")
    if not grid:
        return []
    programs = 1
    for g in grid:
        programs *= int(g)
    cores = ctx.target.sm_count if ctx.is_mixed else ctx.target.vector_cores
    rounds = -(-programs // cores)
    args = {
        "grid": "x".join(str(g) for g in grid),
        "programs": programs,
        "cores": cores,
        "core_kind": "ai_core" if ctx.is_mixed else "vector_core",
        "rounds": rounds,
        "idle_cores": cores - programs if programs < cores else None,
        "over_limit": CORE_DIM_LIMIT if programs > CORE_DIM_LIMIT else None,
    }
    if programs > cores:
        kind = "missed"
    elif programs < cores:
        kind = "analysis"
    else:
        kind = "passed"
    raw = f"grid=({', '.join(str(g) for g in grid)})"
    return [ctx.evidence("LaunchGrid", kind, "launch", ctx.kernel_location, args, raw)]
