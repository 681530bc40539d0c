"""retune-launch: new block size and num_warps at the launch of a kernel with no `tl.dot`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnose.rewrite.launch_values import current_values, every_access_masked, set_values
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext, missed
from diagnose.rewrite.source import Kernel, calls, dotted, grid_coupled, kernels, sites_of

BLOCKS = (1024, 2048, 4096, 8192)
WARPS = (4, 8, 16)
# Values per thread worth having: 4 fp32 make one 128-bit access; past 32 the registers fill up.
PER_THREAD = (4, 32)


@dataclass(frozen=True)
class RetunePlan:
    kernel: str
    block: str
    current: dict


class RetuneLaunch(Rewrite):
    """## What it changes
    The block size (the constexpr that sizes `tl.arange`) and `num_warps` of a launch in
    `ModelNew.forward`: the literal at the launch, or the host variable it names (`BLOCK_SIZE = 128`
    becomes `BLOCK_SIZE = 1024`), so a grid computed from that name follows. `num_warps` is set or
    added. The values come from the launch-config search (compiled offline, pruned on IR facts,
    ranked by the static estimate or timed on a device); without a search, 1024 with 4 warps.

    ## When it is valid
    The kernel has no `tl.dot` (tile shapes are `wgmma-tiles`' business) and is not autotuned; every
    load and store is masked, so a larger block only adds masked-off lanes at the edges; the block
    size is a literal or a host variable bound once to a literal; if it multiplies a program id, the
    grid is computed from that same variable. One launch of the kernel in `ModelNew.forward`.

    ## Why it is faster
    A block of 128 with 4 warps gives each thread one value: 32-bit accesses, millions of tiny
    programs and their scheduling cost. 1024-8192 values per program give each thread 4-32
    contiguous values: 128-bit accesses and enough bytes in flight to cover memory latency.

    ## Safety
    Safe: each output element is computed by the same expression; only the reduction tree of an
    in-block reduction may change with the block size.

    ## Answers
    TRI001 (too-few-elements-per-thread), TRI018 (more-warps-than-elements); IR evidence
    GlobalAccessWidth (missed, `elements_per_thread`).

    ## References
    notes/triton-internals.md section 3a (access width vs elements per thread); Triton tutorial
    01-vector-add.
    """

    id = "retune-launch"
    title = "Retune the block size and num_warps at the launch"
    codes = ("TRI001", "TRI018")
    evidence = ("GlobalAccessWidth",)
    conflicts = ("add-autotune",)
    tunable = True

    def precondition(self, ctx: RewriteContext) -> Precondition:
        reasons = []
        for kernel in kernels(ctx.module).values():
            plan = _plan(ctx, kernel)
            if isinstance(plan, RetunePlan):
                now = ", ".join(f"{k}={v}" for k, v in plan.current.items())
                return Precondition.yes(f"{kernel.name}: launched with {now}", (kernel.name,), plan)
            if plan:
                reasons.append(f"{kernel.name}: {plan}")
        return Precondition.no("; ".join(reasons) or "no launched kernel with a block size to retune")

    def answers(self, evidence) -> bool:
        return missed(evidence, "GlobalAccessWidth", "elements_per_thread")

    def search_space(self, ctx: RewriteContext, plan: RetunePlan) -> list[dict[str, Any]]:
        out = [self.default(plan)]
        for block in BLOCKS:
            for warps in WARPS:
                per_thread = block // (32 * warps)
                values = {plan.block: block, "num_warps": warps}
                if PER_THREAD[0] <= per_thread <= PER_THREAD[1] and values not in out:
                    out.append(values)
        return out

    def default(self, plan: RetunePlan) -> dict[str, int]:
        """1024 with 4 warps for a small block; a block already that large keeps its values (first in
        the search space, so that an estimate tie changes nothing)."""
        block = plan.current.get(plan.block) or 0
        if block < BLOCKS[0]:
            return {plan.block: BLOCKS[0], "num_warps": 4}
        return {plan.block: block, "num_warps": plan.current.get("num_warps") or 4}

    def transform(self, ctx: RewriteContext, plan: RetunePlan) -> str:
        values = {k: int(v) for k, v in ctx.params if k in (plan.block, "num_warps")} or self.default(plan)
        return set_values(ctx.module, plan.kernel, values).code


def tile_constexpr(kernel: Kernel) -> str | None:
    """The constexpr that sizes the kernel's `tl.arange` (a grid-coupled one first)."""
    sizes = []
    for call in calls(kernel.node.body, "arange"):
        if len(call.args) == 2:
            name = dotted(call.args[1].value)
            if name in kernel.constexprs and name not in sizes:
                sizes.append(name)
    coupled = [s for s in sizes if s in grid_coupled(kernel)]
    return (coupled or sizes or [None])[0]


def _plan(ctx: RewriteContext, kernel: Kernel) -> RetunePlan | str | None:
    sites = sites_of(ctx.module, kernel.name)
    if not sites:
        return None
    if calls(kernel.node.body, "dot", "dot_scaled"):
        return "has tl.dot (see wgmma-tiles)"
    if kernel.autotuned:
        return "autotuned"
    block = tile_constexpr(kernel)
    if block is None:
        return "no constexpr sizes its tl.arange"
    if len(sites) != 1:
        return f"launched {len(sites)} times"
    if not every_access_masked(kernel):
        return "a load or store has no mask: a larger block would run past the data"
    current = current_values(ctx.module, kernel.name, (block, "num_warps"))
    if isinstance(current, str):
        return current
    return RetunePlan(kernel.name, block, current)
