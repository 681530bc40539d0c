"""PtxasResources: registers, barriers, stack and spills per kernel, from the bundled `ptxas -v`.

## What it reads
The log of the very ptxas run that made the cubin (`make_cubin` with `TRITON_DUMP_PTXAS_LOG`, the
same binary `get_ptxas()` picks: in Triton 3.6 the CUDA 12.8 `ptxas` below sm_100 and
`ptxas-blackwell` (12.9) from sm_100 on), e.g.::

    ptxas info    : Used 224 registers, used 1 barriers
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

## Kinds
A `metric` record `PtxasResources` at the kernel's `def` line (`registers`, `barriers`,
`stack_frame`, `spill_stores`, `spill_loads`, `maxnreg`, and `occupancy_regs`: resident warps per
SM that the register count allows, out of 64); a `missed` record `RegisterSpill` when ptxas spilled.
"""

from __future__ import annotations

import re

from diagnose.ir.facts.context import FactContext
from diagnose.records import Evidence

# ptxas info    : Used 224 registers, used 1 barriers, 3080 bytes cumulative stack size
PTXAS_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?")
#     3080 bytes stack frame, 6652 bytes spill stores, 5128 bytes spill loads
PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
MAX_WARPS_PER_SM = 64


def ptxas_resources(ctx: FactContext) -> list[Evidence]:
    log = ctx.record.ptxas_log
    used, spill = PTXAS_USED.search(log), PTXAS_SPILL.search(log)
    if not used:
        return []
    registers = int(used[1])
    warps = ctx.record.metadata.get("num_warps") or 4
    args = {
        "registers": registers,
        "barriers": int(used[2] or 0),
        "stack_frame": int(spill[1]) if spill else 0,
        "spill_stores": int(spill[2]) if spill else 0,
        "spill_loads": int(spill[3]) if spill else 0,
        "maxnreg": ctx.record.metadata.get("maxnreg"),
        "occupancy_regs": _warps_by_registers(ctx, registers, warps),
    }
    raw = used.group(0)
    out = [ctx.evidence("PtxasResources", "metric", "ptxas", ctx.kernel_location, args, raw)]
    if args["spill_stores"] or args["spill_loads"]:
        spill_args = {k: args[k] for k in ("registers", "spill_stores", "spill_loads", "stack_frame")}
        out.append(ctx.evidence("RegisterSpill", "missed", "ptxas", ctx.kernel_location, spill_args, spill.group(0)))
    return out


def _warps_by_registers(ctx: FactContext, registers: int, warps_per_block: int) -> int | None:
    """Resident warps per SM the register file allows (whole blocks; allocation granularity 256)."""
    if not ctx.target.regs_per_sm:
        return None
    per_warp = -(-registers * 32 // 256) * 256
    blocks = ctx.target.regs_per_sm // (per_warp * warps_per_block)
    return min(MAX_WARPS_PER_SM, blocks * warps_per_block)
