"""LaunchShape: how many programs the grid launches against the SMs (CUs) of the target.

## What it reads
The launch's grid (from the task's captured launch or the example spec; nothing when unknown) and
the target's `sm_count`. One program is one block on one SM; `waves` is programs / SMs (as if one
block ran per SM at a time, an upper bound on the waves a real occupancy gives).

## Kinds
`metric` with `programs`, `sm_count`, `waves` and `last_wave` (the fraction of SMs the last wave
keeps busy); `missed` when the grid has fewer programs than SMs (`reason` =
`fewer_programs_than_sms`): the rest of the GPU idles, whatever the kernel does.
"""

from __future__ import annotations

from diagnose.ir.facts.context import FactContext
from diagnose.records import Evidence


def launch_shape(ctx: FactContext) -> list[Evidence]:
    if not ctx.grid:
        return []
    programs = 1
    for g in ctx.grid:
        programs *= g
    sms = ctx.target.sm_count
    tail = programs % sms
    args = {
        "grid": "x".join(map(str, ctx.grid)),
        "programs": programs,
        "sm_count": sms,
        "waves": round(programs / sms, 2),
        "last_wave": round((tail or sms) / sms, 2),
    }
    kind = "metric"
    if programs < sms:
        kind, args["reason"] = "missed", "fewer_programs_than_sms"
    return [ctx.evidence("LaunchShape", kind, "launch", ctx.kernel_location, args, f"grid = {ctx.grid}")]
