"""retune-launch: new block size and num_warps at the launch of a kernel with no `tl.dot`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from diagnose.rewrite.dependence import dependence
from diagnose.rewrite.launch_values import read_beyond_launch, set_values, shown, slots, tile_accesses_masked
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext, missed
from diagnose.rewrite.launches import cdiv_parts, grid_elements, launch_sites, launched, resolve_grid, sites_of, within
from diagnose.rewrite.source import (
    Kernel,
    calls,
    coupled_by_axis,
    dotted,
    grid_coupled,
    kernels,
    names,
    positional,
    walk,
)

BLOCKS = (1024, 2048, 4096, 8192)
WARPS = (4, 8, 16)
# Values per thread worth having: 4 fp32 make one 128-bit access; past 32 the registers fill up.
PER_THREAD = (4, 32)
RANGES = ("range", "tl.range", "tl.static_range", "triton.language.range", "triton.language.static_range")


@dataclass(frozen=True)
class RetunePlan:
    kernel: str
    block: str
    current: dict
    hosts: dict  # "block" / "num_warps" -> the host variable that sets it, where one does
    rest: int = 1  # the product of the tile's other sizes (`BLOCK_N` of a BLOCK_M x BLOCK_N tile)


class RetuneLaunch(Rewrite):
    """## What it changes
    The block size (the constexpr that sizes `tl.arange`) and `num_warps` of a kernel's launch, in
    whichever function launches it (a module-level `def op(x)`, an autograd `Function.forward`, a
    task's `ModelNew.forward`): the literal at the launch, or the variable of that function it names
    (`BLOCK_SIZE = 128` becomes `BLOCK_SIZE = 1024`), so a grid computed from that name follows.
    `num_warps` is set or added. The values come from the launch-config search (compiled offline,
    pruned on IR facts, ranked by the static estimate or timed on a device); without a search, 1024
    with 4 warps. The counts are of the whole tile: where other constexprs size the kernel's other
    `tl.arange`s with values known at the launch (a `BLOCK_M x BLOCK_N` tile, `BLOCK_N = 128` on the
    host), the tuned size is the tile's count over theirs (`BLOCK_M` 8-64 beside `BLOCK_N = 128`,
    not 1024: lightllm's silu_and_mul was given a 1024 x 128 tile, 1,024 values per thread, and ptxas
    ran for minutes on each such config). A tile whose other size is not a literal at the launch
    (`BLOCK_D = triton.next_power_of_2(D)`) is not retuned: its count is unknown (lightllm's embedding
    would have gone from a 1 x D tile to 1024 x D).

    ## When it is valid
    The kernel has no `tl.dot` (tile shapes are `wgmma-tiles`' business) and is not autotuned (a `triton.heuristics` that sets
    neither its block size nor `num_warps`, unsloth's `GEMMA` flag, is no matter). Every
    load, store and atomic whose pointer may depend on the block size (through `tl.arange(0, BLOCK)`
    or any local name computed from it, followed through loops and branches, and through the program
    ids where the grid follows the block; when unsure, dependent) or that runs under a condition that
    may, is masked, so a new block only adds masked-off lanes at the edges; an access independent of
    it, like a row reduction's `tl.store(y_ptr + row, tl.sum(acc))` on a grid of rows, needs no
    mask (`diagnose/rewrite/dependence.py`). The data a program
    covers follows the block: it multiplies a program id and the grid is computed from the same host
    variable (or is a literal `triton.cdiv(n, 256)` beside `BLOCK_SIZE=256`, the literal changed with
    it, as first versions write launches: `launch_values.grid_literal`), or it steps a loop (`for start in range(0, K, BLOCK)`, a row reduction's chunk on a
    grid of rows). The block size is a literal, a module constant bound once at the top (`BLOCK_SIZE =
    1024`, unsloth's swiglu: the launch is given the new literal in its place, where the grid follows the
    launch's meta-parameters or the block does not size the grid), or a host variable bound once to a literal (or to
    `min(literal, ...)`, whose literal changes), or to a power of two computed from the problem
    (`triton.next_power_of_2(N)`, bare or in a `min(...)`: FlagGems' reductions, the tutorials' layer
    norm), which the new value caps (`min(1024, MAX_FUSED_SIZE, triton.next_power_of_2(N))`) where
    the host reads it only to compute what the launch is given (not the tutorials' `if N > BLOCK_SIZE:
    raise`): the data a program covers follows the block either way; a host variable that other launches of that function
    (or of functions nested in it) read too must pass these checks as their block size (or num_warps)
    as well. `num_warps` missing from the launch is added, unless a `**kwargs` of the launch may set
    it. One launch of the kernel in the module, in any function, at any block depth.

    ## Why it is faster
    A block of 128 with 4 warps gives each thread one value: 32-bit accesses, millions of tiny
    programs and their scheduling cost. 1024-8192 values per program give each thread 4-32
    contiguous values: 128-bit accesses and enough bytes in flight to cover memory latency.

    ## Safety
    Safe: each output element is computed by the same expression; only the reduction tree of an
    in-block reduction may change with the block size.

    ## Answers
    TRI001 (too-few-elements-per-thread), TRI018 (more-warps-than-elements); the profiling codes
    PRF001 (memory-bound short of the roof, where the static estimate sees enough bytes in flight
    and the device does not: activation_gelu's 1024-element blocks with 4 warps moved 16-bit data at
    66% of the H200's copy roof),
    PRF003 (latency-bound: more independent work in flight) and PRF005 (launch-bound: more work per
    program); IR evidence GlobalAccessWidth (missed, `elements_per_thread`) and RegisterSpill (ptxas
    spilled: a tile of too many values a thread, lightllm's silu_and_mul at 128 x 128 with 4 warps,
    255 registers; the search drops configurations that spill, the current ones too). The agent
    proposes nothing once the kernel is within its roofline fraction on every input group.

    ## References
    Triton tutorial 01-vector-add. A global access's width follows the elements per thread,
    `BLOCK / (32 * num_warps)`, capped at 128 bits.
    """

    id = "retune-launch"
    title = "Retune the block size and num_warps at the launch"
    codes = ("TRI001", "TRI018", "PRF001", "PRF003", "PRF005")
    evidence = ("GlobalAccessWidth", "RegisterSpill")
    conflicts = ("add-autotune",)
    tunable = True

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            RetunePlan,
            lambda p: f"launched with {shown(p.current)}",
            "no launched kernel with a block size to retune",
        )

    def answers(self, evidence) -> bool:
        return missed(evidence, "GlobalAccessWidth", "elements_per_thread") or missed(evidence, "RegisterSpill")

    def search_space(self, ctx: RewriteContext, plan: RetunePlan) -> list[dict[str, Any]]:
        first = self.default(plan)
        return [first, *(v for v in tile_space(plan.block, plan.rest) if v != first)]

    def default(self, plan: RetunePlan) -> dict[str, int]:
        """A tile of 1024 elements with 4 warps for a small one (the tuned size times the tile's other
        sizes); a tile already that large keeps its values (first in the search space, so that an
        estimate tie changes nothing)."""
        block = plan.current.get(plan.block) or 0
        if block * plan.rest < BLOCKS[0]:
            return {plan.block: max(1, BLOCKS[0] // plan.rest), "num_warps": 4}
        return {plan.block: block, "num_warps": plan.current.get("num_warps") or 4}

    def transform(self, ctx: RewriteContext, plan: RetunePlan) -> str:
        values = {k: int(v) for k, v in ctx.params if k in (plan.block, "num_warps")} or self.default(plan)
        return set_values(ctx.module, plan.kernel, values).code


def tile_space(block: str, rest: int) -> list[dict[str, int]]:
    """Values of `block` making a tile of 1,024-8,192 elements (`block` times `rest`, the product of the
    tile's other sizes) with the `num_warps` that give each thread 4-32 of them."""
    out = []
    for tile in BLOCKS:
        size = max(1, tile // rest)
        for warps in WARPS:
            if PER_THREAD[0] <= size * rest // (32 * warps) <= PER_THREAD[1]:
                out.append({block: size, "num_warps": warps})
    return out


def tile_constexpr(kernel: Kernel) -> str | None:
    """The constexpr that sizes the kernel's `tl.arange` (a grid-coupled one first)."""
    sizes = arange_constexprs(kernel)
    coupled = [s for s in sizes if s in grid_coupled(kernel)]
    return (coupled or sizes or [None])[0]


def arange_constexprs(kernel: Kernel) -> list[str]:
    """The constexprs that size the kernel's `tl.arange`s, in source order."""
    sizes = []
    for call in calls(kernel.node.body, "arange"):
        if len(call.args) == 2:
            name = dotted(call.args[1].value)
            if name in kernel.constexprs and name not in sizes:
                sizes.append(name)
    return sizes


def steps_a_loop(kernel: Kernel, block: str) -> bool:
    """`block` is the step of a loop whose bounds do not depend on it (`range(0, K, BLOCK)`), or the
    loop counts `tl.cdiv(K, BLOCK)` chunks (a grid-stride loop too): it covers the same data whatever
    the block size."""
    dependent = dependence(kernel.node, block).names
    for node in walk(kernel.node.body):
        if not (isinstance(node, cst.For) and isinstance(node.iter, cst.Call) and dotted(node.iter.func) in RANGES):
            continue
        args = [a.value for a in positional(node.iter)]
        if not 1 <= len(args) <= 3:
            continue
        start, stop, step = (None, args[0], None) if len(args) == 1 else (*args, None)[:3]
        chunks = cdiv_parts(stop)
        if step is not None and dotted(step) == block:
            bounds = [start, stop]
        elif chunks and dotted(chunks[1]) == block:
            bounds = [start, step, chunks[0]]
        else:
            continue
        if not set().union(*(names(b) for b in bounds if b is not None)) & dependent:
            return True
    return False


def _plan(ctx: RewriteContext, kernel: Kernel) -> RetunePlan | str | None:
    plan = _own_plan(ctx, kernel)
    if not isinstance(plan, RetunePlan):
        return plan
    site = sites_of(ctx.module, kernel.name)[0]
    known = kernels(ctx.module)
    for role, host in plan.hosts.items():
        for other in launch_sites(ctx.module):
            if other.statement is site.statement or not within(site, other) or host not in names(other.call):
                continue
            # the new literal reaches this launch too: it must be as safe to change there
            theirs = _own_plan(ctx, known[other.kernel])
            if not isinstance(theirs, RetunePlan):
                return f"{host} also reaches the launch of {other.kernel}, where it cannot change ({theirs})"
            if theirs.hosts.get(role) != host:
                return f"{host} also reaches the launch of {other.kernel}, but not as its {role}"
    return plan


def _own_plan(ctx: RewriteContext, kernel: Kernel) -> RetunePlan | str | None:
    """The plan for `kernel`'s launch alone, other launches sharing its host names not considered."""
    sites = sites_of(ctx.module, kernel.name)
    if not sites:
        return None
    if calls(kernel.node.body, "dot", "dot_scaled"):
        return "has tl.dot (see wgmma-tiles)"
    block = tile_constexpr(kernel)
    if kernel.decides({"num_warps"} | ({block} if block else set())):
        return "autotuned"
    if block is None:
        return "no constexpr sizes its tl.arange"
    if len(sites) != 1:
        return launched(sites)
    found = slots(kernel, sites[0], (block, "num_warps"))
    if isinstance(found, str):
        return found
    slot = found[block]
    if slot.kind == "host" and slot.current is None and read_beyond_launch(sites[0], slot.host_name):
        return f"{slot.host_name} is computed from the problem and read beyond the launch: capping it changes more"
    if not tile_accesses_masked(kernel, block, _grid_axes(ctx, kernel, block, slot.host_name)):
        return "a load or store has no mask: a larger block would run past the data"
    if block not in grid_coupled(kernel) and not steps_a_loop(kernel, block):
        return f"{block} neither multiplies a program id nor steps a loop: what a program covers may not follow it"
    hosts = {("block" if p == block else p): s.host_name for p, s in found.items() if s.kind == "host"}
    rest = tile_rest(kernel, sites[0], block)
    if isinstance(rest, str):
        return rest
    return RetunePlan(kernel.name, block, {p: s.current for p, s in found.items()}, hosts, rest)


def tile_rest(kernel: Kernel, site, *blocks: str) -> int | str:
    """The product of the tile's other sizes, as launched (`BLOCK_N = 128` beside the tuned `BLOCK_M`):
    a 2-D tile holds `block * rest` elements, and that is what the values per thread count. A size not
    known at the launch (`BLOCK_D = triton.next_power_of_2(D)`) leaves the count unknown: the reason."""
    block = blocks[0]
    others = [s for s in arange_constexprs(kernel) if s not in blocks]
    if not others:
        return 1
    found = slots(kernel, site, tuple(others))
    if isinstance(found, str):
        return f"the tile's other sizes ({', '.join(others)}) cannot be read at the launch: {found}"
    rest = 1
    for param, slot in found.items():
        if not slot.current or slot.current < 0:
            return (
                f"{param}, the tile's other size, is not a literal at the launch: how many values a program "
                f"holds at a new {block} cannot be counted"
            )
        rest *= slot.current
    return rest


def _grid_axes(ctx: RewriteContext, kernel: Kernel, block: str, host: str | None) -> frozenset[int]:
    """The grid axes whose extent may change with the block size: their program ids change with it."""
    site = sites_of(ctx.module, kernel.name)[0]
    grid, _ = resolve_grid(site)
    every = frozenset(range(3))
    if isinstance(grid, cst.Lambda):
        return every
    coupled = frozenset(a for a, constexprs in coupled_by_axis(kernel).items() if block in constexprs)
    if host is None:
        return coupled
    follows = dependence(site.host, host, host=True)
    elements = grid_elements(grid)
    if elements is None:
        return every if follows.depends(grid) else coupled
    return coupled | {i for i, e in enumerate(elements) if follows.depends(e)}
