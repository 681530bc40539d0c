"""SharedMemoryUsage: the shared memory (LDS) a kernel needs, against the target's limit.

## What it reads
`metadata.shared`: the dynamic shared memory Triton allocated (`ttg.shared` after allocation:
pipelining buffers, layout-conversion and reduction scratch). ptxas and the AMDGCN comments show
only static shared memory (usually 0), so this is the number that matters. The target's
`shared_per_block` (227 KB on sm_90, 64 KB of LDS on gfx942) is the most a block may use; Triton
compiles a kernel over the limit offline, and only refuses it (`OutOfResources`) when loading it.

## Kinds
`metric` with `shared`, `limit`, and `blocks_per_sm` (how many blocks fit one SM's shared memory);
`missed` (`SharedMemoryOverLimit`) when the kernel cannot launch on the target at all.
"""

from __future__ import annotations

from diagnose.ir.facts.context import FactContext
from diagnose.records import Evidence


def shared_memory(ctx: FactContext) -> list[Evidence]:
    shared = ctx.record.metadata.get("shared")
    if shared is None:
        return []
    limit = ctx.target.shared_per_block
    args = {
        "shared": shared,
        "limit": limit,
        "blocks_per_sm": ctx.target.shared_per_sm // shared if shared else None,
    }
    out = [ctx.evidence("SharedMemoryUsage", "metric", "ttgir", ctx.kernel_location, args, f"ttg.shared = {shared}")]
    if shared > limit:
        over = {"shared": shared, "limit": limit, "over_by": shared - limit}
        out.append(
            ctx.evidence(
                "SharedMemoryOverLimit", "missed", "ttgir", ctx.kernel_location, over, f"ttg.shared = {shared}"
            )
        )
    return out
