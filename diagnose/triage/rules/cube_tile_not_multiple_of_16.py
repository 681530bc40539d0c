from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import dot_dims


class CubeTileNotMultipleOf16(Rule):
    """## What it finds
    A `tl.dot` kernel with BLOCK_M, BLOCK_N or BLOCK_K known not to be a multiple of 16.

    ## Why it is slow
    The cube unit computes 16x16x16 fp16 fractals per cycle; a tile dimension that is not a multiple
    of 16 is padded up to the next fractal, wasting cube cycles and L0 space on zeros, and forces
    unaligned moves between L1 and L0.

    ## Example
    ```python
    matmul_kernel[grid](..., BLOCK_M=8, BLOCK_N=64, BLOCK_K=64)
    ```

    ## Use instead
    ```python
    matmul_kernel[grid](..., BLOCK_M=128, BLOCK_N=256, BLOCK_K=64)   # multiples of 16
    ```

    ## Known false positives
    None known. Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (825 kernel
    files, ascend:910b): 0 findings; wherever dot tile values are known they are multiples of 16
    (or an autotune list has a config whose are).

    ## Targets
    ascend.

    ## References
    skills.sh ascend/agent-skills, triton-operator-performance-optim (BLOCK_M/N/K multiples of 16);
    mindspore-ai/akg hardware sheets (cube 16x16x16 fp16 per cycle).
    """

    code = "ASC012"
    name = "cube-tile-not-multiple-of-16"
    message = "`tl.dot` tile {name}={value} is not a multiple of 16; the cube pads it to {padded}"
    fix_title = "Use tile dimensions that are multiples of 16"
    confidence = "high"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            dims = dot_dims(kernel)
            if not kernel.has_dot or not dims:
                continue

            def odd(v):
                return next((d for d in dims.values() if v.int(d) is not None and v.int(d) % 16), None)

            for v in ctx.failing(kernel, odd):
                name = odd(v)
                value = v.int(name)
                yield self.hit(v.where(name), name=name, value=value, padded=-(-value // 16) * 16)
