"""SoftwarePipelining: whether each loop that loads from global memory was software-pipelined.

## What it reads
TTGIR loops (`scf.for`) and the ops inside them: asynchronous copies into shared memory
(`ttg.async_copy_global_to_local`, i.e. `cp.async`; `amdg.buffer_load_to_local`), TMA copies
(`ttng.async_tma_copy_global_to_local`), multi-buffered allocations (`ttg.local_alloc` of
`!ttg.memdesc<3x128x64xf16, ...>`: 3 buffers), and plain `tt.load` / `amdg.buffer_load` left in
the loop: when the same source line also loads once before the loop, the pipeliner peeled a
prologue and the loads run an iteration ahead through registers (AMD's stream pipeliner without
async copies); the `num_stages` option; the pipeliner's warnings (`Pipelining will be disabled`).

## Kinds
`passed` when the loop's loads are issued stages ahead (`mechanism` = `cp.async`, `tma` or
`prefetch`, with `buffers` and `shared_per_stage` bytes); `missed` when a loop with a `tl.dot`
(or an explicit `tl.range(num_stages=...)`) still loads synchronously: `reason` is `num_stages=1`,
the pipeliner's own warning, or `not_pipelined`; `analysis` for other loops that load (pipelining
them is not expected).
"""

from __future__ import annotations

import re

from diagnose.ir.facts.context import FactContext
from diagnose.records import Evidence

NAME = "SoftwarePipelining"
SYNC_LOADS = ("tt.load", "amdg.buffer_load", "tt.descriptor_load")
ASYNC_COPIES = ("ttg.async_copy_global_to_local", "amdg.buffer_load_to_local")
TMA_COPIES = ("ttng.async_tma_copy_global_to_local",)
DOTS = ("tt.dot", "ttng.warp_group_dot", "ttng.tc_gen5_mma", "tt.dot_scaled")
# %a = ttg.local_alloc : () -> !ttg.memdesc<3x128x64xf16, #shared, #smem, mutable>
MEMDESC = re.compile(r"!ttg\.memdesc<(?P<shape>(?:\d+x)+)(?P<elem>\w+),")


def pipelining(ctx: FactContext) -> list[Evidence]:
    ops = ctx.ops("ttgir")
    loops = [op for op in ops if op.name == "scf.for"]
    allocs = [op for op in ops if op.name == "ttg.local_alloc"]
    out = []
    for loop in loops:
        body = [op for op in ops if loop.contains(op)]
        if any(loop is not other and other.contains(loop) for other in loops):
            continue  # report the outermost loop; nested ones share its buffers
        names = [op.name for op in body]
        async_copies = sum(n in ASYNC_COPIES for n in names)
        tma = sum(n in TMA_COPIES for n in names)
        sync_loads = sum(n in SYNC_LOADS for n in names)
        if not (async_copies or tma or sync_loads):
            continue
        buffers, per_stage = _buffers(allocs)
        num_stages = ctx.record.metadata.get("num_stages")
        load_lines = {op.location.line for op in body if op.name in SYNC_LOADS and op.location}
        # The pipeliner peels a prologue: the loop's loads also appear once before it.
        prologue = any(
            op.ir_line < loop.ir_line and op.name in SYNC_LOADS and op.location and op.location.line in load_lines
            for op in ops
        )
        mechanism = "tma" if tma else "cp.async" if async_copies else "prefetch" if prologue else None
        args = {
            "pipelined": mechanism is not None,
            "mechanism": mechanism,
            "num_stages": num_stages,
            "buffers": buffers or None,
            "async_copies": async_copies or None,
            "tma_copies": tma or None,
            "sync_loads": sync_loads or None,
            "shared_per_stage": per_stage or None,
            "shared": ctx.record.metadata.get("shared"),
        }
        if mechanism:
            kind = "passed"
        elif any(n in DOTS for n in names) or "tt.num_stages" in loop.raw:
            kind = "missed"
            warning = next((d for d in ctx.diagnostics if "ipelin" in d.message), None)
            args["reason"] = "num_stages=1" if num_stages == 1 else warning.message if warning else "not_pipelined"
        else:
            kind = "analysis"
        out.append(ctx.evidence(NAME, kind, "ttgir", loop.location, args, loop.raw))
    return out


def _buffers(allocs) -> tuple[int, int]:
    """(buffers of the multi-buffered allocations, bytes of one stage of all of them)."""
    buffers, per_stage = 0, 0
    for op in allocs:
        m = MEMDESC.search(op.raw)
        if not m or "()" not in op.raw:
            continue  # an alloc initialised from a value holds one copy, not a ring of buffers
        shape = [int(d) for d in m["shape"].rstrip("x").split("x")]
        if len(shape) < 2:
            continue
        bits = 8 if m["elem"].startswith("f8") else int(re.search(r"\d+", m["elem"])[0])
        stage = bits // 8
        for d in shape[1:]:
            stage *= d
        buffers = max(buffers, shape[0])
        per_stage += stage
    return buffers, per_stage
