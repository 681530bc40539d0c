from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import dot_dims


class CubeTileOverflowsL0(Rule):
    """## What it finds
    A `tl.dot` kernel whose tiles do not fit the cube unit's buffers: `BLOCK_M*BLOCK_K*2 B` or
    `BLOCK_K*BLOCK_N*2 B` above L0A/L0B (64 KB), or `BLOCK_M*BLOCK_N*4 B` above L0C (128 KB on 910B,
    256 KB on 950).

    ## Why it is slow
    The cube reads operands from L0A/L0B and accumulates into L0C. Tiles that overflow them are split
    by the compiler into smaller passes with extra L1-L0 traffic, or fail to compile. (fp16 operands
    and an fp32 accumulator assumed.)

    ## Example
    ```python
    matmul_kernel[grid](..., BLOCK_M=256, BLOCK_N=256, BLOCK_K=128)   # A tile 64 KB, C tile 256 KB
    ```

    ## Use instead
    ```python
    matmul_kernel[grid](..., BLOCK_M=128, BLOCK_N=256, BLOCK_K=64)    # 16 KB, 32 KB, 128 KB
    ```

    ## Known false positives
    None known. Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (825 kernel
    files, ascend:910b): 0 findings; where tile values are known they fit (or an autotune list has a
    config that does), and tiles chosen by host code the evaluator cannot follow are not judged. The fp16-operand
    assumption overstates fp8/int8 operands (half the bytes) and understates fp32 ones.

    ## Targets
    ascend.

    ## References
    mindspore-ai/akg hardware sheets, `akg_agents/python/akg_agents/op/resources/docs/hardware/<SoC>.md`
    (L0A/L0B 64 KB, L0C 128/256 KB; third-party, not Huawei datasheets).
    """

    code = "ASC011"
    name = "cube-tile-overflows-l0"
    message = "{which} tile {a}x{b} needs {kb} KB; L0{buf} holds {limit} KB"
    fix_title = "Shrink BLOCK_M/BLOCK_N/BLOCK_K to fit L0A/L0B (64 KB) and L0C"
    targets = ("ascend",)

    def check(self, ctx):
        t = ctx.target
        for kernel in ctx.kernels.values():
            dims = dot_dims(kernel)
            if not kernel.has_dot or len(dims) < 3:
                continue

            def overflow(v):
                m, n, k = (v.int(dims[d]) for d in "MNK")
                if None in (m, n, k):
                    return None
                for which, a, b, size, buf, limit in (
                    ("A", m, k, 2, "A", t.l0ab_bytes),
                    ("B", k, n, 2, "B", t.l0ab_bytes),
                    ("C", m, n, 4, "C", t.l0c_bytes),
                ):
                    if a * b * size > limit:
                        return which, a, b, a * b * size, buf, limit
                return None

            for v in ctx.failing(kernel, overflow):
                which, a, b, need, buf, limit = overflow(v)
                dim = dims["N"] if which == "B" else dims["M"]
                yield self.hit(v.where(dim), which=which, a=a, b=b, kb=need // 1024, buf=buf, limit=limit // 1024)
