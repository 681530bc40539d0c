from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import arange_sizes


class MoreWarpsThanElements(Rule):
    """## What it finds
    A 1-D reduction-style kernel (softmax row, norm row, scan) whose block has fewer elements than
    the program has threads: `BLOCK < warp_size * num_warps`, e.g. 16 warps for a 256-wide row.

    ## Why it is slow
    Threads beyond the block's size hold replicated copies of the data: they issue duplicate loads,
    take part in every cross-warp reduction step (shared memory round trips and barriers) and add
    nothing. Fewer warps per program finish sooner and let more programs share each SM.
    (Elementwise kernels are covered by `too-few-elements-per-thread`.)

    ## Example
    ```python
    softmax_kernel[(n_rows,)](x, out, n_cols, BLOCK=256, num_warps=16)   # 512 threads, 256 elements
    ```

    ## Use instead
    ```python
    num_warps = 4 if BLOCK <= 2048 else 8 if BLOCK <= 8192 else 16
    softmax_kernel[(n_rows,)](x, out, n_cols, BLOCK=BLOCK, num_warps=num_warps)
    ```

    ## Known false positives
    The block size was the largest *known* `tl.arange`, so a kernel whose main block is sized at
    run time (`BLOCK_D = triton.next_power_of_2(D)`) was judged by a small side vector next to it
    (`tl.arange(0, MAX_BLOCKS)` of 32 slots, a `tl.arange(0, 1)` counter): 3 of 3 findings on
    Liger-Kernel and FlagGems. The rule now needs every `tl.arange` of the kernel to have a known
    size. None known since.

    ## Targets
    cuda, hip.

    ## References
    Triton tutorial 02-fused-softmax (num_warps by block size).
    """

    code = "TRI018"
    name = "more-warps-than-elements"
    message = "{num_warps} warps ({threads} threads) for a {size}-element block; the extra threads duplicate work"
    fix_title = "Lower num_warps to fit the block (or raise the block)"
    targets = ("cuda", "hip")

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if kernel.is_elementwise or kernel.is_2d or kernel.has_dot:
                continue

            def block(v):
                sizes = arange_sizes(ctx, kernel, v)
                if len(sizes) < len(kernel.calls("arange")):
                    return None  # an unknown arange may be the big one: the block size is unknown
                return max(s[0] for s in sizes) if sizes else None

            threads = lambda v: ctx.target.warp_size * v.num_warps  # noqa: E731
            for v in ctx.failing(kernel, lambda v: (b := block(v)) is not None and b < threads(v)):
                yield self.hit(v.where("num_warps"), num_warps=v.num_warps, threads=threads(v), size=block(v))
