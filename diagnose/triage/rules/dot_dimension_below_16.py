from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import dot_dims


class DotDimensionBelow16(Rule):
    """## What it finds
    A `tl.dot` kernel whose BLOCK_M, BLOCK_N or BLOCK_K is known to be below 16.

    ## Why it is slow
    It does not compile: on NVIDIA Triton requires M, N, K >= 16 for `tl.dot` (K >= 32 for 8-bit
    types) and rejects smaller tiles (an int8 16x16x16 dot fails with "Input shapes should have
    M >= 1, N >= 1 and K >= 32"). Tiny dots are better written as broadcast multiply-adds
    (`tl.sum(a[:, :, None] * b[None, :, :], axis=1)`).

    ## Example
    ```python
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=16, BLOCK_N=16, BLOCK_K=8)
    ```

    ## Use instead
    ```python
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    ```

    ## Known false positives
    None known. Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (825 kernel
    files; 172 kernels with `tl.dot`) for cuda:sm90: no finding, so there was nothing to misread (the
    rule does not run for Ascend).

    ## Targets
    cuda.

    ## References
    `triton.language.dot` documentation.
    """

    code = "TRI023"
    name = "dot-dimension-below-16"
    message = "`tl.dot` tile {name}={value} is below 16; Triton rejects dots smaller than 16x16x16"
    fix_title = "Use tiles of at least 16 (32 for 8-bit types)"
    severity = "error"
    confidence = "high"
    targets = ("cuda",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            dims = dot_dims(kernel)
            if not kernel.has_dot or not dims:
                continue

            def small(v):
                return next((d for d in dims.values() if v.int(d) is not None and v.int(d) < 16), None)

            for v in ctx.failing(kernel, small):
                name = small(v)
                yield self.hit(v.where(name), name=name, value=v.int(name))
