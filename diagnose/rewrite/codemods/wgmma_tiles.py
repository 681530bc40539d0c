"""wgmma-tiles: matmul tiles, warps and stages sized for the target's matrix engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnose.rewrite.launch_values import (
    computed_on_host,
    config_first,
    current_values,
    every_access_masked,
    first_tuned_values,
    set_values,
    shown,
)
from diagnose.rewrite.matmul import DotTiles, dot_tiles
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import launched, sites_of
from diagnose.rewrite.source import Kernel, calls, grid_coupled, kernels
from diagnose.targets import Target

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); the first of each list is the default.
# sm_90: wgmma needs M >= 64 per warpgroup and 4+ warps; 128x128x64 / 8 warps / 3 stages is the
# fp16 sweet spot (96 KB of shared memory for A and B stages).
TILES = {
    "cuda:90": [
        (128, 128, 64, 8, 3),
        (128, 128, 64, 4, 4),
        (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
        (64, 128, 64, 4, 4),
        (128, 64, 64, 4, 4),
        (128, 128, 32, 8, 4),
    ],
    "cuda:100": [(128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4)],
    # sm_80: mma.sync; cp.async pipelining wants 3-4 stages.
    "cuda:80": [(128, 128, 32, 4, 3), (128, 128, 64, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4)],
    # MI300: 64 KB of LDS; Triton's AMD matmuls use 2 stages.
    "hip": [(128, 128, 64, 8, 2), (128, 128, 32, 4, 2), (256, 128, 32, 8, 2), (64, 128, 64, 4, 2)],
    # Ascend cube: A and B tiles within L0A/L0B (64 KB), C within L0C; multiples of 16.
    "npu": [(128, 128, 128, 4, 1), (128, 256, 64, 4, 1), (64, 128, 128, 4, 1)],
}


@dataclass(frozen=True)
class TilePlan:
    kernel: str
    tiles: DotTiles
    current: dict
    autotuned: bool = False  # the new values go first in its autotune configs, not into the launch


class WgmmaTiles(Rewrite):
    """## What it changes
    The M, N, K tile constexprs of a `tl.dot` kernel's launch, with `num_warps` and `num_stages`:
    on sm_90 128x128x64, 8 warps, 3 stages (fp16), so that `tl.dot` lowers to wgmma
    (`warp_group_dot`) with an async-copy pipeline. The tiles are found through the dot's operands
    (the `tl.arange` sizes indexing A's rows and columns and B's), not by name; the launch-config
    search picks among a few shapes per target, pruning those that spill, overflow shared memory or
    lose the MMA path. Literals change at the launch or at the host variables they name, so a grid
    computed from them follows.

    ## When it is valid
    Every load and store is masked, or bounds-checked on a block pointer (`boundary_check=(0, 1)`; the
    tiles then read from `tl.make_block_ptr`'s `block_shape`) (the kernel handles ragged M, N, K edges,
    so any tile shape computes the same result); M and N tiles multiply program ids and the grid is computed from the
    same host variables, or repeats their literals (`triton.cdiv(M, 32)` beside `BLOCK_M=32` or a
    signature default `BLOCK_M: tl.constexpr = 32` the launch leaves alone: the literals change with
    the tiles, which the launch then passes by keyword) (an autotuned kernel: its grid a callable reading the tiles from its
    meta-parameters, and the new shape goes first in its literal `configs` list, beside the authors'
    configs, which the autotuner still times); the kernel is launched once, from any function of the
    module (a module-level `def matmul(a, b)`, an autograd `Function.forward`, `ModelNew.forward`,
    at any block depth), the host variables being that function's.

    ## Why it is faster
    32x32 tiles with 4 warps cannot use wgmma (it needs M >= 64 per warpgroup): the dot runs on
    mma.sync at half the tensor-core rate, each tile re-reads A and B from L2 (low arithmetic
    intensity) and shared-memory stages are too small to hide latency.

    ## Safety
    Safe: the same products, accumulated in fp32 in another order along K.

    ## Answers
    TRI005 (dot-below-wgmma-minimum), TRI006 (unpipelined-k-loop), TRI022 (tiles overflow shared
    memory), TRI023 (dot dimension below 16), ASC011/ASC012 (cube tiles); the profiling code PRF001
    (memory-bound): for a `tl.dot` kernel that is the operands re-read from memory for every small
    output tile (a 64x64 tile on wgmma is still memory-bound where 128x128 is not: the H200 run of
    npukernel matmul_bias at 43% of its roofline, 0.50x of cuBLAS); IR evidence DotLowering (missed)
    and SoftwarePipelining (missed).

    ## References
    Triton tutorial 03-matrix-multiplication (configs). wgmma needs sm_90, M >= 64 per warpgroup and
    at least 4 warps; shared memory holds (A + B tile bytes) x `num_stages` on sm_90.
    """

    id = "wgmma-tiles"
    title = "Matmul tiles, warps and stages sized for the matrix engine (wgmma on sm_90)"
    codes = ("TRI005", "TRI006", "TRI022", "TRI023", "ASC011", "ASC012", "PRF001")
    evidence = ("DotLowering", "SoftwarePipelining")
    tunable = True

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            TilePlan,
            lambda p: (
                f"tl.dot tiles {'first in its autotune configs' if p.autotuned else 'launched with'} {shown(p.current)}"
            ),
            "no launched kernel with a tl.dot",
        )

    def answers(self, evidence) -> bool:
        if evidence.kind != "missed":
            return False
        if evidence.name == "DotLowering":  # an IEEE fp32 dot is dot-input-precision's business
            return evidence.arg("reason") in ("m_per_warpgroup_lt_64", "num_warps_lt_4")
        return evidence.name == "SoftwarePipelining"

    def search_space(self, ctx: RewriteContext, plan: TilePlan) -> list[dict[str, Any]]:
        return [_values(plan.tiles, row) for row in tiles_for(ctx.target)]

    def transform(self, ctx: RewriteContext, plan: TilePlan) -> str:
        keys = (plan.tiles.m, plan.tiles.n, plan.tiles.k, "num_warps", "num_stages")
        values = {k: int(v) for k, v in ctx.params if k in keys} or _values(plan.tiles, tiles_for(ctx.target)[0])
        if plan.autotuned:
            return config_first(ctx.module, plan.kernel, values).code
        return set_values(ctx.module, plan.kernel, values).code


def tiles_for(target: Target) -> list[tuple[int, int, int, int, int]]:
    if target.backend == "cuda":
        return TILES.get(f"cuda:{target.arch}", TILES["cuda:90"])
    return TILES[target.backend]


def _values(tiles: DotTiles, row: tuple[int, ...]) -> dict[str, int]:
    m, n, k, warps, stages = row
    return {tiles.m: m, tiles.n: n, tiles.k: k, "num_warps": warps, "num_stages": stages}


def _plan(ctx: RewriteContext, kernel: Kernel) -> TilePlan | str | None:
    sites = sites_of(ctx.module, kernel.name)
    tiles = dot_tiles(kernel)
    if not sites:
        return None
    if tiles is None:
        # a dot whose operands are not one (M, K) x (K, N) product of loaded tiles, e.g. attention's P @ V
        return (
            "its tl.dot is not a matmul of loaded (M, K) and (K, N) tiles" if calls(kernel.node.body, "dot") else None
        )
    if len(sites) != 1:
        return launched(sites)
    coupled = grid_coupled(kernel)
    if tiles.m not in coupled or tiles.n not in coupled:
        return f"{tiles.m}/{tiles.n} do not both multiply program ids"
    if not every_access_masked(kernel):
        return "a load or store has no mask: other tile shapes would run past M, N or K"
    if kernel.autotuned:
        # extend the configs, not the launch: the autotuner then times the new shape with the authors' own
        first = first_tuned_values(
            ctx.module,
            kernel.name,
            sites[0],
            (tiles.m, tiles.n, tiles.k, "num_warps", "num_stages"),
            (tiles.m, tiles.n),
        )
        return first if isinstance(first, str) else TilePlan(kernel.name, tiles, first, autotuned=True)
    current = current_values(ctx.module, kernel.name, (tiles.m, tiles.n, tiles.k, "num_warps", "num_stages"))
    if isinstance(current, str):
        return current
    if computed := computed_on_host(current, (tiles.m, tiles.n, tiles.k)):
        return computed
    return TilePlan(kernel.name, tiles, current)
