from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.kernel import TL
from diagnose.triage.rules.common import arange_sizes, constexpr_params, fmt, pointer_of


class TooFewElementsPerThread(Rule):
    """## What it finds
    A 1-D elementwise kernel whose block gives each thread fewer than 4 elements:
    `BLOCK / (warp_size * num_warps) < 4`. The kernel must have a block load whose index is an arange
    not taken from loaded blocks (a gather), every `tl.arange` must have a known size, and the kernel
    must not call a `@triton.jit` helper that reduces or scans (there the block is the helper's window).

    ## Why it is slow
    Triton vectorizes a thread's contiguous elements into one 128-bit access (4 x fp32). With one
    element per thread every load is a 32-bit `ld.global`, and the grid has many tiny programs whose
    launch and index overhead dominates. (fp32 on sm_90: BLOCK 128 with 4 warps gives 1 x 32-bit
    load per thread; BLOCK 1024 gives 2 x 128-bit.)

    ## Example
    ```python
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=128)   # 4 warps: 1 element per thread
    ```

    ## Use instead
    ```python
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)  # 8 elements per thread
    ```

    ## Known false positives
    Now accepted (6 of the 9 false among 25 labelled findings on FlagGems and TritonBench): a kernel
    whose only block access is a store and whose loads are per-program scalars (`ptr + pid`, one short
    run per program, e.g. repeat_interleave); loads that are data-dependent gathers (a binary search
    over a CDF in multinomial); a `tl.arange(0, 1)` broadcast helper next to a tile whose size is
    unknown (heuristics, autotune), which used to be reported as "size 1". A per-program start offset
    loaded as a scalar (`start = tl.load(starts + pid)`) does not make the copy a gather and stays
    flagged. After the held-out labels (2026-12, 6 findings: 3 false, 3 debatable), also accepted:
    kernels whose every arange-indexed load moves by something other than one element or one runtime
    stride per lane, so no block size vectorizes them: a diagonal walk (`row * stride0 + col *
    stride1` with row and col from the same arange), an arange times a literal other than 1, and
    offsets split and rebuilt with a runtime divisor (`(offs // D) * D + offs % D`), which Triton's
    axis analysis cannot prove contiguous. Still misread: with a runtime D that is a multiple of 16
    the JIT's divisibility specialization does recover runs of 16, so the rebuilt form could
    vectorize and is now missed; `offs % D` alone (a broadcast bias) counts the same way; a single
    runtime stride (`offs * stride`) is taken as possibly 1 and still flagged; and a block that is
    the window of an imported helper (a sort from another module). Debatable: tiny metadata kernels over a batch, and kernels
    whose one contiguous load sits next to gathers and scattered stores (nll_loss, diag).

    ## Targets
    cuda, hip (wavefronts of 64 on AMD).

    ## References
    Triton tutorial 01-vector-add.
    """

    code = "TRI001"
    name = "too-few-elements-per-thread"
    message = "{block}={size} with {num_warps} warps gives {per_thread} element(s) per thread, below 4; loads cannot vectorize"
    fix_title = "Raise the block size (e.g. 1024) or lower num_warps"
    confidence = "high"
    targets = ("cuda", "hip")

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if (
                not kernel.is_elementwise
                or not _contiguous_block_load(kernel)
                or _calls_tile_helper(ctx, kernel, depth=3)
            ):
                continue
            n_aranges = len(kernel.calls("arange"))

            def per_thread(v):
                sizes = arange_sizes(ctx, kernel, v)
                if len(sizes) < n_aranges:
                    return None  # a tile of unknown size (autotuned, heuristics): the largest is unknown
                return max(s[0] for s in sizes) / (ctx.target.warp_size * v.num_warps) if sizes else None

            for v in ctx.failing(kernel, lambda v: (p := per_thread(v)) is not None and p < 4):
                size, where, block = max(arange_sizes(ctx, kernel, v), key=lambda s: s[0])
                yield self.hit(where, block=block, size=size, num_warps=v.num_warps, per_thread=fmt(per_thread(v)))


def _contiguous_block_load(kernel) -> bool:
    """A `tl.load` indexed by an arange (a block, not a per-program scalar like `ptr + pid`) whose
    index does not come from loaded blocks (not a gather such as a binary search; a loaded per-program
    start offset is fine): the loads the vectorization argument is about."""
    aranges = {id(c) for c in kernel.calls("arange")}
    from_arange = {
        name for name, values in kernel.assigns.items() if any(id(n) in aranges for v in values for n in ast.walk(v))
    }
    # loaded blocks used as indices make a gather; a loaded scalar (a per-program start) is only a base
    loaded = kernel.loaded_names() & kernel.block_names
    for call in kernel.calls("load"):
        pointer = pointer_of(call)
        if pointer is None:
            continue
        names = kernel.sources(pointer)
        direct = any(id(n) in aranges for n in ast.walk(pointer))
        if (direct or names & from_arange) and not names & loaded and _lane_stride(kernel, pointer) >= STRIDED:
            return True
    return False


# How an address moves from one lane to the next, as far as Triton's axis analysis can tell: the
# same for all lanes, not provably contiguous at any block size, by a runtime stride (contiguous
# once the JIT specializes it to 1), by one element.
SAME, SCATTERED, STRIDED, UNIT = 0, 1, 2, 3


def _lane_stride(kernel, expr: ast.AST, memo: dict | None = None) -> int:
    """The lane-to-lane stride of `expr` over the 1-D aranges of an elementwise kernel. Two
    arange-carrying terms added together (`row * stride0 + col * stride1`, a diagonal walk), an
    arange times a literal other than 1, or divided or reduced modulo a runtime value
    (`(offs // D) * D + offs % D`) leave no run the compiler can prove contiguous: SCATTERED.
    A name assigned more than once takes its best assignment (`offs += BLOCK` keeps `offs` UNIT)."""
    memo = {} if memo is None else memo

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Name):
            if node.id in memo:
                return memo[node.id]
            memo[node.id] = SAME  # cycles add nothing
            memo[node.id] = max((walk(v) for v in kernel.assigns.get(node.id, ())), default=SAME)
            return memo[node.id]
        if isinstance(node, ast.Call):
            name = kernel.qualname(node.func) or ""
            if name == TL + "arange":
                return UNIT
            if name == TL + "load":
                return SAME  # loaded values: gathers are told apart elsewhere
            parts = list(node.args) + [k.value for k in node.keywords]
            if isinstance(node.func, ast.Attribute) and not name.startswith("triton."):
                parts.append(node.func.value)  # offs.to(tl.int64)
            return max((walk(a) for a in parts), default=SAME)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, (ast.Add, ast.Sub)):
                if left == SAME or right == SAME:
                    return max(left, right)
                return SCATTERED  # two lane-varying terms: their strides add up past 1
            if isinstance(node.op, ast.Mult):
                if left != SAME and right != SAME:
                    return SCATTERED
                varying, factor = (left, node.right) if left != SAME else (right, node.left)
                if varying == SAME:
                    return SAME
                if isinstance(factor, ast.Constant):
                    return varying if factor.value == 1 else SCATTERED
                return min(varying, STRIDED)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and left != SAME:
                if not _compile_time(kernel, node.right):
                    return SCATTERED
                return left if isinstance(node.op, ast.Mod) else SAME
            return max(left, right)
        if isinstance(node, ast.Constant):
            return SAME
        return max((walk(c) for c in ast.iter_child_nodes(node)), default=SAME)

    return walk(expr)


def _compile_time(kernel, expr: ast.AST) -> bool:
    """A literal or a constexpr parameter: Triton's axis analysis knows its value."""
    if isinstance(expr, ast.Constant):
        return True
    return isinstance(expr, ast.Name) and expr.id in constexpr_params(kernel)


def _calls_tile_helper(ctx, kernel, depth: int) -> bool:
    """Whether the kernel calls a `@triton.jit` helper that reduces, sorts or works on 2-D tiles: then
    the block is the helper's working set (a sort window, a scan), not a vector width."""
    if depth == 0:
        return False
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            helper = ctx.kernels.get(node.func.id)
            if (
                helper is not None
                and helper is not kernel
                and (not helper.is_elementwise or _calls_tile_helper(ctx, helper, depth - 1))
            ):
                return True
    return False
