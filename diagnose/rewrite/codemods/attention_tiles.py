"""attention-tiles: FlashAttention query and key tiles, warps and stages sized for the matrix engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from diagnose.rewrite.launch_values import (
    computed_on_host,
    config_first,
    current_values,
    every_access_masked,
    first_tuned_values,
    set_values,
    shown,
)
from diagnose.rewrite.matmul import arange_sizes, assignments, axis_names, index_tiles, operand_pointer
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import launched, sites_of
from diagnose.rewrite.source import Kernel, assigned_names, calls, grid_coupled, is_tl_call, kernels, read_names, walk
from diagnose.targets import Target

# (BLOCK_M, BLOCK_N, num_warps, num_stages), the first of each list the default: FlashAttention-2 /
# Triton tutorial 06 values. sm_90: wgmma needs M >= 64 per warpgroup, so 128 queries on 8 warps (two
# warpgroups) or 4. Shared memory holds `stages` K and V tiles, 2 * stages * BLOCK_N * BLOCK_D * 2 bytes,
# plus Q: at head dim 128, 128x64 with 3 stages takes 96 + 32 KB and 128x128 192 + 32 KB of the 227 KB;
# at head dim 256 neither fits. The head dim is computed on the host, unknown here: the search compiles
# every configuration and drops those over the target's shared memory (or spilling).
TILES = {
    "cuda:90": [(128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 32, 4, 4)],
    # sm_80: mma.sync with cp.async pipelining; the warps split the queries (FlashAttention-2), 16-32 rows each.
    "cuda:80": [(128, 64, 4, 3), (64, 64, 4, 3), (128, 32, 4, 2)],
    # MI300: 64 KB of LDS, so one stage (Triton's AMD attention configs).
    "hip": [(128, 64, 4, 1), (64, 64, 4, 1)],
    # Ascend cube: Q, K, V tiles within L0A/L0B, S and O within L0C; multiples of 16.
    "npu": [(128, 128, 4, 1), (64, 128, 4, 1)],
}


@dataclass(frozen=True)
class AttentionLoop:
    """The query, key and head-dim tile constexprs of an attention loop (the head dim stays)."""

    query: str
    key: str
    head: str


@dataclass(frozen=True)
class AttentionPlan:
    kernel: str
    tiles: AttentionLoop
    current: dict
    autotuned: bool = False  # the new values go first in its autotune configs, not into the launch


class AttentionTiles(Rewrite):
    """## What it changes
    The query and key tile constexprs of a FlashAttention-style kernel's launch, with `num_warps` and
    `num_stages`: on sm_90 128 queries by 64 keys, 8 warps, 3 stages, so that both `tl.dot`s (Q K^T
    and P V) lower to wgmma with an async-copy pipeline for K and V. The kernel is recognised by its
    structure, not by names: one loop with two `tl.dot`s, the first one's result feeding the second
    one's first operand through an exponential (the softmax); the query tile indexes the rows of the
    first dot's A operand and of a store and multiplies a program id; the key tile indexes the rows
    of K (through `tl.trans`) and of V. The head-dim tile is left alone. Literals change at the launch
    or at the host variables they name, so a grid computed from them follows.

    ## When it is valid
    Every load and store is masked (the kernel handles a ragged sequence length, so any tile shape
    computes the same result); the query tile multiplies a program id and the grid is computed from
    the same host variable; the tiles are literals or host names bound once to literals (an autotuned
    kernel: a grid callable reading the query tile from its meta-parameters, and the new shape goes
    first in its literal `configs` list, beside the authors' configs, which the autotuner still
    times); the kernel is launched once, from any function of the module (at any block depth; the
    host variables are that function's). A kernel with one `tl.dot` is a matmul: wgmma-tiles.

    ## Why it is faster
    32x32 tiles with 4 warps cannot use wgmma (it needs M >= 64 per warpgroup): both dots run on
    mma.sync at half the tensor-core rate, each program re-reads all of K and V for only 32 queries
    (low arithmetic intensity) and one stage leaves the K and V loads exposed.

    ## Safety
    Safe: the same products, accumulated in fp32 in another order, and the online-softmax rescaling
    (running max and sum) applied at other key-block boundaries; results differ only by rounding.

    ## Answers
    TRI005 (dot-below-wgmma-minimum), TRI006 (unpipelined-k-loop); IR evidence DotLowering (missed)
    and SoftwarePipelining (missed).

    ## References
    Triton tutorial 06-fused-attention (configs); Dao, FlashAttention-2 (2023), block sizes and warp
    partitioning.
    """

    id = "attention-tiles"
    title = "Attention query/key tiles, warps and stages sized for the matrix engine (wgmma on sm_90)"
    codes = ("TRI005", "TRI006")
    evidence = ("DotLowering", "SoftwarePipelining")
    conflicts = ("wgmma-tiles", "retune-launch", "add-autotune")
    tunable = True

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            AttentionPlan,
            lambda p: (
                f"attention tiles {'first in its autotune configs' if p.autotuned else 'launched with'} "
                f"{shown(p.current)}"
            ),
            "no launched kernel with a tl.dot",
        )

    def answers(self, evidence) -> bool:
        if evidence.kind != "missed":
            return False
        if evidence.name == "DotLowering":  # an IEEE fp32 dot is dot-input-precision's business
            return evidence.arg("reason") in ("m_per_warpgroup_lt_64", "num_warps_lt_4")
        return evidence.name == "SoftwarePipelining"

    def search_space(self, ctx: RewriteContext, plan: AttentionPlan) -> list[dict[str, Any]]:
        return [_values(plan.tiles, row) for row in tiles_for(ctx.target)]

    def transform(self, ctx: RewriteContext, plan: AttentionPlan) -> str:
        keys = (plan.tiles.query, plan.tiles.key, "num_warps", "num_stages")
        values = {k: int(v) for k, v in ctx.params if k in keys} or _values(plan.tiles, tiles_for(ctx.target)[0])
        if plan.autotuned:
            return config_first(ctx.module, plan.kernel, values).code
        return set_values(ctx.module, plan.kernel, values).code


def tiles_for(target: Target) -> list[tuple[int, int, int, int]]:
    if target.backend == "cuda":
        return TILES.get(f"cuda:{target.arch}", TILES["cuda:90"])
    return TILES[target.backend]


def _values(tiles: AttentionLoop, row: tuple[int, ...]) -> dict[str, int]:
    m, n, warps, stages = row
    return {tiles.query: m, tiles.key: n, "num_warps": warps, "num_stages": stages}


def attention_loop(kernel: Kernel) -> AttentionLoop | str | None:
    """The tiles of the kernel's attention loop; why it is not one (a string); None without a dot."""
    dots = calls(kernel.node.body, "dot")
    if not dots:
        return None
    loops = [n for n in walk(kernel.node.body) if isinstance(n, cst.For) and len(calls(n.body, "dot")) == 2]
    if not loops:
        return "no loop with two tl.dot calls (Q K^T and P V); a matmul is wgmma-tiles' job"
    loop = loops[-1]  # the innermost
    first, second = calls(loop.body, "dot")
    if len(first.args) < 2 or len(second.args) < 2 or not _feeds(loop, first, second):
        return "the first tl.dot does not feed the second one's A operand through a softmax (exp)"
    bound, sizes = assignments(kernel), arange_sizes(kernel)
    q, k, v = (_axes(kernel, d.args[i].value, bound) for d, i in ((first, 0), (first, 1), (second, 1)))
    if q is None or k is None or v is None:
        return "Q, K or V is not one tl.load"

    def tile(found: set[str]) -> str | None:
        tiles = index_tiles(found, bound, sizes)
        return tiles.pop() if len(tiles) == 1 else None

    query, head, key = tile(q[0]), tile(q[1]), tile(k[1])
    if None in (query, head, key) or tile(k[0]) != head or tile(v[0]) != key or len({query, key, head}) < 3:
        return "cannot read distinct query, key and head-dim tiles from the dots' operands"
    stored = [tile(axis_names(s.args[0].value)[0]) for s in calls(kernel.node.body, "store") if s.args]
    if query not in stored:
        return f"no store has rows indexed by the query tile {query}"
    return AttentionLoop(query, key, head)


def _feeds(loop: cst.For, first: cst.Call, second: cst.Call) -> bool:
    """The first dot's result reaches the second dot's A operand through the loop's statements, with
    an exponential among them (the softmax of Q K^T, online or not)."""
    derived: set[str] = set()
    softmax = False
    for stmt in loop.body.body:
        if any(n is first for n in walk(stmt)) or read_names(stmt) & derived:
            derived |= assigned_names(stmt)
            softmax = softmax or bool(calls(stmt, "exp", "exp2"))
    return softmax and bool(read_names(second.args[0].value) & derived)


def _axes(kernel: Kernel, operand: cst.BaseExpression, bound: dict) -> tuple[set[str], set[str]] | None:
    """Names indexing the rows and columns of a dot operand loaded from memory, seen through
    `tl.trans(x)` or `x.T` (K is loaded as keys x head dim and transposed for Q K^T)."""
    transposed = False
    if is_tl_call(operand, "trans") and operand.args:
        operand, transposed = operand.args[0].value, True
    elif isinstance(operand, cst.Attribute) and operand.attr.value == "T":
        operand, transposed = operand.value, True
    pointer = operand_pointer(kernel, operand, bound)
    if pointer is None:
        return None
    rows, cols = axis_names(pointer)
    return (cols, rows) if transposed else (rows, cols)


def _plan(ctx: RewriteContext, kernel: Kernel) -> AttentionPlan | str | None:
    sites = sites_of(ctx.module, kernel.name)
    tiles = attention_loop(kernel)
    if not sites or tiles is None:
        return None
    if isinstance(tiles, str):
        return tiles
    if len(sites) != 1:
        return launched(sites)
    if tiles.query not in grid_coupled(kernel):
        return f"the query tile {tiles.query} does not multiply a program id"
    if not every_access_masked(kernel):
        return "a load or store has no mask: other tile shapes would run past the sequence length"
    if kernel.autotuned:
        # extend the configs, not the launch: the autotuner then times the new shape with the authors' own
        first = first_tuned_values(
            ctx.module, kernel.name, sites[0], (tiles.query, tiles.key, "num_warps", "num_stages"), (tiles.query,)
        )
        return first if isinstance(first, str) else AttentionPlan(kernel.name, tiles, first, autotuned=True)
    current = current_values(ctx.module, kernel.name, (tiles.query, tiles.key, "num_warps", "num_stages"))
    if isinstance(current, str):
        return current
    if computed := computed_on_host(current, (tiles.query, tiles.key)):
        return computed
    return AttentionPlan(kernel.name, tiles, current)
