from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import constexpr_params, is_program_id, keyword, program_id_calls


class MatmulWithoutGroupSwizzle(Rule):
    """## What it finds
    A tiled matmul (a `tl.dot` in a loop, output tiles indexed by two program-id-derived indices,
    each scaled by a block size) that maps program ids to tiles in plain row- or column-major order:
    no `GROUP_SIZE_M` swizzle, no `tl.swizzle2d`, and no order computed by a helper of its own.

    ## Why it is slow
    Programs run roughly in id order. Row-major order walks a whole row of output tiles before the
    next, so the B panel is re-read from HBM for every row of tiles (column-major order, `pid_m = pid
    % num_pid_m`, re-reads the A panel for every column of tiles); grouping GROUP_M rows of tiles
    together keeps the A and B panels in L2 and cuts DRAM traffic substantially on large matrices
    (Triton's tutorial measures ~10% on A100; Ascend reports the same for swizzled block order).

    ## Example
    ```python
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    ```

    ## Use instead
    ```python
    pid = tl.program_id(0)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    ```

    ## Known false positives
    Measured on 50 findings (Liger-Kernel, FlagGems, TritonBench), 10 of them real GEMMs. Now
    accepted: tile grids that are not a large GEMM's output, recognised by a tile axis whose extent
    (`offs < N`, `offs % N`, `tl.cdiv(N, BLOCK)`, or a block pointer's shape at the tiled position)
    is a `tl.constexpr` parameter: linear-attention and chunked-retention kernels tiled over the
    head dims (`i_k * BK`, `i_v * BV` with a batch-head third axis), attention score kernels over a
    compiled-in sequence length, skinny projections onto a small mixing width. Such axes have a
    handful of tiles and their panels stay in L2. Batch offsets (`i_bh * T * K`) no longer count as
    tiles: a tile factor must size a block (`tl.arange`, `tl.zeros`, a block shape). Still
    misread: none of the remaining findings; a GEMM whose N and K are passed as `tl.constexpr`
    (fixed weight shapes) is no longer flagged (lost recall, e.g. per-expert MoE weight-gradient
    GEMMs), and a LoRA expand (small contraction, runtime sizes) is still flagged though the
    swizzle gains little there. Held-out (mamba, 2026-12-08): a varlen scan kernel whose chunk loop
    `for c in range(cdiv(seqlen, CHUNK))` has a program-dependent bound was read as a tile axis
    (`c * CHUNK`). A loop variable now counts as program-derived only through its range's start or
    step (`range(pid, num_tiles, NUM_SMS)`, a persistent kernel's tiles, still flagged). Held-out
    (applied-ai, 2026-12-08): an MoE GEMM whose order a `@triton.jit` helper computes (`pid_m, pid_n =
    col_major(pid, ...)`, chosen on purpose) was flagged as row-major: a helper's order is now taken as
    the authors' choice; and the message said "row-major, B re-read" of column-major GEMMs (`pid_m =
    pid % num_pid_m`, where A is re-read): it now names neither. Still debatable: persistent grouped
    MoE GEMMs whose per-expert M is a handful of tiles.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 03-matrix-multiplication ("L2 cache optimizations"); mindspore-ai/akg
    matmul_swizzle2d (Ascend).
    """

    code = "TRI019"
    name = "matmul-without-group-swizzle"
    message = (
        "output tiles follow program ids in plain row- or column-major order (no GROUP_M swizzle); "
        "one operand's panel is re-read from HBM for each row (or column) of tiles"
    )
    fix_title = "Group GROUP_SIZE_M tile rows (tutorial swizzle) or use tl.swizzle2d"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if not kernel.has_dot or not any(_contains_dot(kernel, loop) for loop in kernel.loops):
                continue
            if kernel.calls("swizzle2d") or any("GROUP" in n.upper() for n in (*kernel.params, *kernel.assigns)):
                continue
            pids = kernel.calls("program_id") or program_id_calls(kernel)
            tiles = _tile_blocks(kernel)
            if not pids or len(tiles) < 2:
                continue
            compile_time = constexpr_params(kernel)
            if any(_extents(kernel, block, index) & compile_time for block, index in tiles.items()):
                continue  # a tile axis spans a compiled-in model dimension: a handful of tiles
            if _order_from_helper(kernel, set().union(*tiles.values()), set(ctx.kernels)):
                continue  # `pid_m, pid_n = col_major(pid, ...)`: the order is the helper's, chosen
            yield self.hit(pids[0])


def _order_from_helper(kernel, indices: set[str], helpers: set[str]) -> bool:
    """A tile index is bound to the result of another `@triton.jit` function of the module
    (applied-ai's MoE GEMM: `pid_m, pid_n = col_major(pid, EM, N, block_m, block_n)`): the authors
    wrote the order down on purpose, whatever it is."""
    for name in indices:
        for value in kernel.assigns.get(name, ()):
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in helpers:
                return True
    return False


def _contains_dot(kernel, loop) -> bool:
    inside = {id(n) for n in ast.walk(loop)}
    return any(id(c) in inside for c in kernel.calls("dot"))


def _names(expr) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _tile_sizes(kernel) -> set[str]:
    """Constexpr names that size a block: `tl.arange(0, B)`, `tl.zeros((B, ...))`, a block_shape,
    a descriptor load's block shape."""
    out = set()
    for call in kernel.calls("arange", "zeros", "full"):
        out |= {n for a in call.args for n in _names(a)}
    for call in kernel.calls("make_block_ptr"):
        shape = keyword(call, "block_shape", 4)
        if shape is not None:
            out |= _names(shape)
    for node in ast.walk(kernel.node):  # desc.load([m, k]), tl._experimental_descriptor_load(d, offs, [BM, BK], t)
        if isinstance(node, ast.Call) and "load" in getattr(node.func, "attr", ""):
            out |= {n for a in node.args if isinstance(a, (ast.List, ast.Tuple)) for n in _names(a)}
    return out & constexpr_params(kernel)


def _tile_blocks(kernel) -> dict[str, set[str]]:
    """Block sizes multiplied by a program-id-derived index (`pid_m * BLOCK_M`), with those indices.
    Batch offsets (`i_bh * T * K`) are not tiles: the factor must size a block somewhere."""
    derived = {
        name
        for name, values in kernel.assigns.items()
        if any(is_program_id(n) for v in values for n in ast.walk(_distributing(kernel, v)))
    }
    changed = True
    while changed:  # names computed from pid-derived names (pid_m = pid // num_pid_n)
        changed = False
        for name, values in kernel.assigns.items():
            if name not in derived and any(
                isinstance(n, ast.Name) and n.id in derived for v in values for n in ast.walk(_distributing(kernel, v))
            ):
                derived.add(name)
                changed = True
    sizes = _tile_sizes(kernel)
    out: dict[str, set[str]] = {}
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                index = (
                    _names(a) & derived
                    if isinstance(a, ast.Name)
                    or (isinstance(a, ast.BinOp) and isinstance(a.op, (ast.FloorDiv, ast.Mod)))
                    else set()
                )
                if index and isinstance(b, ast.Name) and b.id in sizes:  # pid_m * BM, (pid // n) * BM
                    out.setdefault(b.id, set()).update(index)
    return out


def _distributing(kernel, value: ast.expr) -> ast.AST:
    """What makes a binding program-dependent. A loop variable is one only through its range's start
    and step (`range(pid, num_tiles, NUM_SMS)`: a persistent kernel's tiles); a bound that depends on
    the program (`range(cdiv(seqlen, CHUNK))` with a per-sequence length) still walks each program's
    own chunks in order, not tiles of the output."""
    loop = kernel.parent.get(value)
    if not (isinstance(loop, ast.For) and loop.iter is value and isinstance(value, ast.Call)):
        return value
    args = value.args
    return ast.Tuple(elts=[args[0], *args[2:3]] if len(args) >= 2 else [], ctx=ast.Load())


def _extents(kernel, block: str, index: set[str]) -> set[str]:
    """Names bounding a tiled axis: `offs < N`, `offs % N`, `tl.cdiv(N, BLOCK)`, a block pointer's
    shape at the tiled position. An offset is tiled when it comes from the index and the block size."""

    def tiled(expr) -> bool:
        src = kernel.sources(expr)
        return block in src and bool(src & index)

    out: set[str] = set()
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.LtE)):
            if tiled(node.left):
                out |= _names(node.comparators[0])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and tiled(node.left):
            out |= _names(node.right)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "cdiv"
            and len(node.args) == 2
            and block in _names(node.args[1])
        ):
            out |= _names(node.args[0])
    for call in kernel.calls("make_block_ptr"):
        shape, offsets = keyword(call, "shape", 1), keyword(call, "offsets", 3)
        if isinstance(shape, (ast.Tuple, ast.List)) and isinstance(offsets, (ast.Tuple, ast.List)):
            for extent, offset in zip(shape.elts, offsets.elts):
                if tiled(offset):
                    out |= _names(extent)
    return out
