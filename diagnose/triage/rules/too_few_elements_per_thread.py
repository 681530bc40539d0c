from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import arange_sizes, fmt


class TooFewElementsPerThread(Rule):
    """## What it finds
    A 1-D elementwise kernel whose block gives each thread fewer than 4 elements:
    `BLOCK / (warp_size * num_warps) < 4`.

    ## Why it is slow
    Triton vectorizes a thread's contiguous elements into one 128-bit access (4 x fp32). With one
    element per thread every load is a 32-bit `ld.global`, and the grid has many tiny programs whose
    launch and index overhead dominates. (notes/triton-internals.md 3a: BLOCK 128 with 4 warps gives
    1 x 32-bit load per thread; BLOCK 1024 gives 2 x 128-bit.)

    ## Example
    ```python
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=128)   # 4 warps: 1 element per thread
    ```

    ## Use instead
    ```python
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)  # 8 elements per thread
    ```

    ## Targets
    cuda, hip (wavefronts of 64 on AMD).

    ## References
    notes/triton-internals.md section 3a; Triton tutorial 01-vector-add.
    """

    code = "TRI001"
    name = "too-few-elements-per-thread"
    message = "{block}={size} with {num_warps} warps gives {per_thread} element(s) per thread, below 4; loads cannot vectorize"
    fix_title = "Raise the block size (e.g. 1024) or lower num_warps"
    confidence = "high"
    targets = ("cuda", "hip")

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if not kernel.is_elementwise or not kernel.calls("load"):
                continue

            def per_thread(v):
                sizes = arange_sizes(ctx, kernel, v)
                return max(s[0] for s in sizes) / (ctx.target.warp_size * v.num_warps) if sizes else None

            for v in ctx.failing(kernel, lambda v: (p := per_thread(v)) is not None and p < 4):
                size, where, block = max(arange_sizes(ctx, kernel, v), key=lambda s: s[0])
                yield self.hit(where, block=block, size=size, num_warps=v.num_warps,
                               per_thread=fmt(per_thread(v)))
