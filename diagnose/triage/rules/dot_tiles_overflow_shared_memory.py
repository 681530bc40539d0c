from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import dot_dims

OPERAND_BYTES = 2  # fp16/bf16: the smallest common operand type, so the estimate is a lower bound


class DotTilesOverflowSharedMemory(Rule):
    """## What it finds
    A matmul whose A and B tiles, times the number of pipeline buffers, need more shared memory (LDS
    on AMD) than one block can have: `(BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * 2 B * buffers`, with
    `num_stages` buffers on sm_90/sm_100 and `num_stages - 1` on sm_80 and AMD.

    ## Why it is slow
    The launch fails with `OutOfResources: shared memory` (on AMD the binary even compiles offline and
    fails at load). Under autotune such configs are skipped, so only kernels where every config
    overflows are flagged. The estimate assumes 2-byte operands and ignores the epilogue, so the
    real need is at least this large.

    ## Example
    ```python
    matmul_kernel[grid](..., BLOCK_M=256, BLOCK_N=256, BLOCK_K=64, num_stages=4)   # 256 KB on sm_90
    ```

    ## Use instead
    ```python
    matmul_kernel[grid](..., BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_stages=3)   # 144 KB
    ```

    ## Known false positives
    None known. Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (825 kernel
    files; 172 kernels with `tl.dot`, 99 of them with BLOCK_M/N/K-named tiles) for cuda:sm90: no
    finding, so there was nothing to misread (the rule does not run for Ascend). Most of those tiles
    are autotuned, and a kernel is flagged only when every config overflows.

    ## Targets
    cuda, hip.

    ## References
    The compiled kernel's `metadata.shared` (its dynamic shared memory) per num_stages: a 128x128x64
    fp16 matmul on sm_90 needs 65536, 98304 and 131072 B with 2, 3 and 4 stages.
    """

    code = "TRI022"
    name = "dot-tiles-overflow-shared-memory"
    message = "{m}x{n}x{k} tiles with num_stages={stages} need ~{need} KB of shared memory; the limit is {limit} KB"
    fix_title = "Lower num_stages or BLOCK_K, or use smaller tiles"
    severity = "error"
    targets = ("cuda", "hip")

    def check(self, ctx):
        limit = ctx.target.shared_per_block
        for kernel in ctx.kernels.values():
            dims = dot_dims(kernel)
            if not kernel.has_dot or len(dims) < 3:
                continue

            def need(v):
                m, n, k = (v.int(dims[d]) for d in "MNK")
                if None in (m, n, k):
                    return None
                stages = v.num_stages(ctx.target)
                per_buffer = (m * k + k * n) * OPERAND_BYTES
                if ctx.target.family == "cuda" and not ctx.target.short_arch.startswith("sm8"):
                    return per_buffer * max(1, stages)
                return per_buffer * max(1, stages - 1)

            for v in ctx.failing(kernel, lambda v: (b := need(v)) is not None and b > limit):
                yield self.hit(
                    v.where("num_stages"),
                    m=v.int(dims["M"]),
                    n=v.int(dims["N"]),
                    k=v.int(dims["K"]),
                    stages=v.num_stages(ctx.target),
                    need=need(v) // 1024,
                    limit=limit // 1024,
                )
