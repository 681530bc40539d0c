from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import dot_dims


class DotBelowWgmmaMinimum(Rule):
    """## What it finds
    A `tl.dot` kernel on sm_90 whose M tile is below 64 or which runs with fewer than 4 warps.

    ## Why it is slow
    Hopper's warpgroup MMA (`wgmma`) needs M >= 64 per warpgroup of 4 warps. Below that Triton falls
    back to Ampere-style `mma.sync` (MMA v2), which reaches roughly half of H100 tensor-core
    throughput and cannot overlap with TMA loads (fp16 on sm_90: 32x128x64 with 4 warps and
    16x16x16 with 1 warp give v2; 64x64x32 with 4 warps gives wgmma). Autotuned kernels are
    flagged only when every config is below the minimum.

    ## Example
    ```python
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    ```

    ## Use instead
    ```python
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8)
    ```

    ## Known false positives
    None known wrong in 4 findings on TritonBench. Doubtful as advice, and still reported (3 of
    4): GEMMs shaped for decoding or LoRA, whose M is a handful of tokens (`M = batch * seq_len`
    in an inference feed-forward, a LoRA expand over a short segment), pick `BLOCK_M` 16 or 32 on
    purpose: they are bound by reading the weight, and a 64-row wgmma tile would be mostly padding.

    ## Targets
    cuda, sm_90 only.

    ## References
    PTX ISA `wgmma.mma_async`.
    """

    code = "TRI005"
    name = "dot-below-wgmma-minimum"
    message = (
        "{dim}={m} with {num_warps} warps is below the wgmma minimum (M >= 64, 4 warps); tl.dot falls back to mma.sync"
    )
    fix_title = "Use BLOCK_M >= 64 with num_warps >= 4"
    targets = ("cuda",)
    archs = ("sm90",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            dim = dot_dims(kernel).get("M")
            if not kernel.has_dot or dim is None:
                continue

            def bad(v):
                m = v.int(dim)
                return m is not None and (m < 64 or v.num_warps < 4)

            for v in ctx.failing(kernel, bad):
                m = v.int(dim)
                where = v.where(dim) if m < 64 else v.where("num_warps")
                yield self.hit(where, dim=dim, m=m, num_warps=v.num_warps)
