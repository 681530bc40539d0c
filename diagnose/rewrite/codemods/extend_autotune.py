"""extend-autotune: more configs for an autotuned kernel's block size, its authors' configs all kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from diagnose.rewrite.autotune_configs import (
    indent_of,
    prepended,
    spread,
    tuned_by_configs,
    tuner_configs,
    written_values,
)
from diagnose.rewrite.codemods.retune_launch import BLOCKS, arange_constexprs, steps_a_loop, tile_rest, tile_space
from diagnose.rewrite.edit import replace
from diagnose.rewrite.codemods.wgmma_tiles import WgmmaTiles, tiles_for
from diagnose.rewrite.launch_values import (
    OPTIONS,
    every_access_masked,
    grid_reads_meta,
    shown,
    tile_accesses_masked,
)
from diagnose.rewrite.matmul import dot_tiles
from diagnose.rewrite.launches import LaunchSite, launched, sites_of
from diagnose.rewrite.rewrite import NotApplicable, Precondition, Rewrite, RewriteContext, missed
from diagnose.rewrite.source import (
    Kernel,
    calls,
    code,
    grid_coupled,
    kernels,
    module_names,
)

# New configs a chosen search adds at most: each one is another trial run for every new key.
MAX_ADDED = 4
# The group of a matmul's program-order swizzle (`GROUP_SIZE_M`) in a new config, as the tutorials set it.
GROUP = 8
# The short side of a two-size tile: a row (1), a few rows (4), a warp's width (32).
SIDES = (1, 4, 32)


@dataclass(frozen=True)
class ExtendPlan:
    kernel: str
    blocks: tuple[str, ...]  # the tile sizes the configs set: one, or two of a 2-D tile
    rest: int  # the product of the tile's other sizes, as launched (1 where the configs set them all)
    configs: cst.BaseExpression  # the decorator's `configs=` value, edited in place
    written: tuple[dict, ...]  # the configs' values where the list is written out (to skip equal ones)
    dot_rows: tuple[tuple[int, ...], ...] = ()  # a matmul's (M, N, K, warps, stages) rows for the target
    fixed: tuple[tuple[str, int], ...] = ()  # constexprs every written config sets alike (`SPLIT_K: 1`)


class ExtendAutotune(Rewrite):
    """## What it changes
    The `configs=` of a kernel already under `@triton.autotune` (or FlagGems' `libtuner`) gains up to
    four configs of the launch-config search's best block sizes and `num_warps`, the authors' configs
    all kept: a written-out list gets the new `triton.Config(...)` entries first; a list built
    elsewhere (a helper, `warps_kernel_configs()`; FlagGems' `runtime.get_tuned_config("op")`, read
    from a YAML file; a comprehension) becomes `[triton.Config(...), ..., *<their expression>]`. First,
    best first: the autotuner times them all on a device, whatever the order, and where nothing can
    be timed (the CPU check) it runs the first, so the verdict is on the best new config.
    Nothing else changes: key, pruning, `restore_value`, the launch and its grid stay as written.
    Without a search to choose (`diagnose rewrite`), the first of the space (1,024 elements, 4 warps)
    is added, and only where the written-out configs try none of the space yet.

    The tile sizes the configs set are read from the launch: the kernel's constexprs without a default
    that the launch does not pass and no `triton.heuristics` sets, each sizing a `tl.arange`; another
    such constexpr that every written config sets to the same integer (kernl's `SPLIT_K: 1`, in a
    `[...] + get_configs_io_bound()` list) is set so in the new configs too. One
    size is searched as `retune-launch` searches it (tiles of 1,024-8,192 elements, 4-32 values a
    thread); two (a `BLOCK_M x BLOCK_N` reduction) over shapes of those counts with one side 1, 4 or
    32 (either side: which one is contiguous is for the IR to show; a narrow side there compiles to
    narrow accesses and is pruned). In the search each configuration is compiled as the one added
    config, so its estimate is the best of the authors' configs and it (an autotuned launch runs its
    fastest); only configurations estimated (or, on a device, timed) faster than the authors' alone
    are added, best first.

    ## When it is valid
    A kernel with `tl.dot`: a matmul of loaded (M, K) and (K, N) tiles whose configs set its M and N
    tiles (K too, or the launch does; a program-order swizzle's `GROUP_SIZE_M` too, set to 8 in a new
    config), every access masked, the grid a callable reading M and N from its meta-parameters; the
    new configs are `wgmma-tiles`' shapes for the target, and a list `wgmma-tiles` can edit itself (a
    written-out one with a readable first config) is left to it. Any other kernel: its configs set one
    or two tile sizes (three, or `num_warps` / `num_stages` alone, as attorch's and mamba's option-only
    lists, are declined with the reason). For
    each size, as for `retune-launch`: every access whose pointer may depend on it is masked, and the
    data a program covers follows it: it multiplies a program id and the grid is a callable reading
    it from its meta-parameters (`lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)`), or it steps a
    loop (a row reduction's chunk on a grid of rows; not a single-pass row, whose block must cover
    the row). The tile's other `tl.arange` sizes are literals at the launch (a size computed on the
    host, or by a heuristic, leaves the values per thread uncounted).
    Every launch of the kernel in the module (in any function: the configs serve them all, FlagGems'
    `sum_dim` and `sum_dim_out`) passes these checks and leaves the same sizes to the autotuner; the
    module imports `triton`.

    ## Why it is faster
    The autotuner times every config on the device for each new key and runs the fastest: with the
    authors' configs all kept it can only gain, and it gains where their list stops short of the
    block sizes and warps the device wants (FlagGems' `count_nonzero` tries 1,024-4,096 elements with
    4 warps only; a larger block with 8 warps gives each thread 128-bit accesses and more bytes in
    flight).

    ## Safety
    Safe: every config computes the same values (the block size changes only the reduction order of
    an in-block reduction), as the authors' own configs already do; each new config costs one more
    trial run per new key.

    ## Answers
    TRI001 (too-few-elements-per-thread), TRI018 (more-warps-than-elements); the profiling codes
    PRF001 (memory-bound short of the roof), PRF003 (latency-bound) and PRF005 (launch-bound), like
    `retune-launch`, whose preconditions decline an autotuned kernel; IR evidence GlobalAccessWidth
    (missed, `elements_per_thread`) and RegisterSpill (a config that does not spill is added).

    ## References
    Triton `triton.autotune` (it benchmarks every config per key and caches the winner); FlagGems'
    `libtuner` and `runtime.get_tuned_config`.
    """

    id = "extend-autotune"
    title = "Add the launch-config search's best block sizes to an autotuned kernel's configs"
    codes = ("TRI001", "TRI018", "PRF001", "PRF003", "PRF005")
    evidence = ("GlobalAccessWidth", "RegisterSpill")
    tunable = True

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            ExtendPlan,
            lambda p: f"autotuned over {' x '.join(p.blocks)}: more tile sizes and warps to try",
            "no launched, autotuned kernel with a block size to extend",
        )

    def answers(self, evidence) -> bool:
        return missed(evidence, "GlobalAccessWidth", "elements_per_thread") or missed(evidence, "RegisterSpill")

    def search_space(self, ctx: RewriteContext, plan: ExtendPlan) -> list[dict[str, Any]]:
        # first the authors' configs alone: the baseline every addition must beat
        return [{}, *(v for v in _space(plan) if not _written(plan, v))]

    def default(self, plan: ExtendPlan) -> list[dict[str, int]]:
        """With no search to choose: the space's first config (1,024 elements, 4 warps), where the
        written-out configs try none of the space yet (so the rewrite is not applied twice)."""
        space = _space(plan)
        tried = [v for v in space if _written(plan, v)]
        if tried:
            raise NotApplicable(
                f"{self.id}: its configs already try {shown(tried[0])}; only a search can tell what to add"
            )
        return space[:1]

    def transform(self, ctx: RewriteContext, plan: ExtendPlan) -> str:
        configs = ctx.param("configs")
        if configs is None:
            # one configuration of the search (its trial compiles it beside the authors'), or the space's first
            single = {k: v for k, v in ctx.params if k in (*plan.blocks, *OPTIONS)}
            configs = [single] if single else self.default(plan)
        added = [
            _config({**values, **dict(plan.fixed)}, (*plan.blocks, *dict(plan.fixed))) for values in configs if values
        ]
        if not added:
            raise NotApplicable(f"{self.id}: no configuration of the search beat the authors' own")
        value = plan.configs
        if isinstance(value, cst.List):
            edited = prepended(value, [cst.parse_expression(c) for c in added])
        else:
            edited = cst.parse_expression(spread(code(value), added, indent_of(ctx.source, plan.configs)))
        return replace(ctx.module, {value: edited}).code


def _config(values: dict, blocks: tuple[str, ...]) -> str:
    sizes = ", ".join(f'"{b}": {int(values[b])}' for b in blocks)
    options = "".join(f", {k}={int(values[k])}" for k in OPTIONS if k in values)
    return f"triton.Config({{{sizes}}}{options})"


def _written(plan: ExtendPlan, values: dict) -> bool:
    """A written-out config already sets these values (a missing `num_warps` is Triton's 4)."""

    def key(config: dict) -> tuple:
        stages = (config.get("num_stages") or 3,) if plan.dot_rows else ()
        return (*(config.get(b) for b in plan.blocks), config.get("num_warps") or 4, *stages)

    return any(key(w) == key(values) for w in plan.written)


def _space(plan: ExtendPlan) -> list[dict[str, int]]:
    if plan.dot_rows:
        return [dict(zip((*plan.blocks, "num_warps", "num_stages"), row)) for row in plan.dot_rows]
    if len(plan.blocks) == 1:
        return tile_space(plan.blocks[0], plan.rest)
    first, second = plan.blocks
    out: list[dict[str, int]] = []
    for total in BLOCKS:
        count = max(1, total // plan.rest)
        warps = min(16, max(4, count // 256))  # 4-16 values a thread
        for side in SIDES:
            if side < count:
                for shape in ((side, count // side), (count // side, side)):
                    values = {first: shape[0], second: shape[1], "num_warps": warps}
                    if values not in out:
                        out.append(values)
    return out


def _fixed(kernel: Kernel, tuned: list[str], written: tuple[dict, ...]) -> dict[str, int]:
    """The constexprs other than tile sizes that every written config sets to one and the same integer
    (kernl's `SPLIT_K: 1` beside its tiles): a new config sets them so too."""
    out = {}
    for name in (t for t in tuned if t not in arange_constexprs(kernel)):
        values = {w.get(name) for w in written}
        if written and len(values) == 1 and isinstance(value := values.pop(), int):
            out[name] = value
    return out


def _plan(ctx: RewriteContext, kernel: Kernel) -> ExtendPlan | str | None:
    configs = tuner_configs(kernel)
    sites = sites_of(ctx.module, kernel.name)
    if configs is None or not sites:
        return None
    if "triton" not in module_names(ctx.module):
        return "the module does not import triton (a new triton.Config needs it)"
    # the configs serve every launch (FlagGems' `sum_dim` and `sum_dim_out`): each must take a new one
    plans = [_site_plan(ctx, kernel, site, configs) for site in sites]
    for site, plan in zip(sites, plans):
        if isinstance(plan, str):
            return plan if len(sites) == 1 else f"its launch in {site.host_name}: {plan}"
    if len({(p.blocks, p.rest) for p in plans}) > 1:
        return f"{launched(sites)}, leaving different tile sizes to the autotuner"
    return plans[0]


def _site_plan(ctx: RewriteContext, kernel: Kernel, site: LaunchSite, configs: cst.BaseExpression) -> ExtendPlan | str:
    tuned = tuned_by_configs(kernel, site)
    if isinstance(tuned, str):
        return tuned
    if not tuned:
        return "its configs set only num_warps / num_stages (no estimate ranks those: launch-options, timed)"
    written = written_values(configs)
    fixed = _fixed(kernel, tuned, written)
    if calls(kernel.node.body, "dot", "dot_scaled"):
        return _matmul_plan(ctx, kernel, site, tuned, configs, written, fixed)
    tuned = [t for t in tuned if t not in fixed]
    if not tuned:
        return f"its configs set only num_warps / num_stages beside {', '.join(fixed)}, the same in every config"
    if len(tuned) > 2:
        return f"its configs set {len(tuned)} constexprs ({', '.join(tuned)}): a new config's shape is not searched"
    for block in tuned:
        why = _follows(kernel, site, block)
        if why:
            return why
    rest = tile_rest(kernel, site, *tuned)
    if isinstance(rest, str):
        return rest
    return ExtendPlan(kernel.name, tuple(tuned), rest, configs, written, fixed=tuple(fixed.items()))


def _follows(kernel: Kernel, site: LaunchSite, block: str) -> str | None:
    """Why a new value of `block` might compute something else, or None: it sizes a `tl.arange`, every
    access that depends on it is masked, and what a program covers follows it."""
    if block not in arange_constexprs(kernel):
        return f"{block}, which its configs set, does not size a tl.arange"
    coupled = block in grid_coupled(kernel)
    if coupled and not grid_reads_meta(site, (block,)):
        return f"{block} multiplies a program id, and the grid is not a callable reading it from its meta-parameters"
    if not coupled and not steps_a_loop(kernel, block):
        return f"{block} neither multiplies a program id nor steps a loop: what a program covers may not follow it"
    # the grid's program ids follow the block only where the grid reads it (FlagGems' count_nonzero:
    # `lambda meta: (triton.cdiv(numel, shape[dim]),)`, one program per row, a per-row store unmasked)
    axes = frozenset(range(3)) if grid_reads_meta(site, (block,)) else frozenset()
    if not tile_accesses_masked(kernel, block, axes):
        return "a load or store has no mask: a larger block would run past the data"
    return None


def _matmul_plan(
    ctx: RewriteContext,
    kernel: Kernel,
    site: LaunchSite,
    tuned: list[str],
    configs: cst.BaseExpression,
    written: tuple[dict, ...],
    fixed: dict[str, int],
) -> ExtendPlan | str:
    """A matmul's configs set its M, N and K tiles (and nothing else the new configs could not set):
    the new configs are `wgmma-tiles`' shapes for the target, which puts them first itself where the
    list is written out and its first config readable."""
    if WgmmaTiles().precondition(ctx).kernels == (kernel.name,):
        return "wgmma-tiles puts its shapes first in the written-out configs"
    tiles = dot_tiles(kernel)
    if tiles is None:
        return "its tl.dot is not a matmul of loaded (M, K) and (K, N) tiles"
    blocks = (tiles.m, tiles.n, tiles.k)
    groups = tuple(t for t in tuned if "GROUP" in t.upper())  # a program-order swizzle: any size is correct
    others = [t for t in tuned if t not in blocks and t not in groups and t not in fixed]
    if others or tiles.m not in tuned or tiles.n not in tuned:
        return f"its configs set {', '.join(tuned)}: not the dot's tiles ({', '.join(blocks)}) alone"
    coupled = grid_coupled(kernel)
    if tiles.m not in coupled or tiles.n not in coupled or not grid_reads_meta(site, (tiles.m, tiles.n)):
        return (
            f"{tiles.m}/{tiles.n} do not both multiply program ids of a grid that reads them from its meta-parameters"
        )
    if not every_access_masked(kernel):
        return "a load or store has no mask: other tile shapes would run past M, N or K"
    # K where the configs set it (else the launch does), then a swizzle's group of 8
    rows = tuple(
        (*row[:2], *((row[2],) if tiles.k in tuned else ()), *((GROUP,) * len(groups)), *row[3:])
        for row in tiles_for(ctx.target)
    )
    names = (tiles.m, tiles.n, *((tiles.k,) if tiles.k in tuned else ()), *groups)
    fixed = {k: v for k, v in fixed.items() if k not in names}
    return ExtendPlan(kernel.name, names, 1, configs, written, rows, tuple(fixed.items()))
