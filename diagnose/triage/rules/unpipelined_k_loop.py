from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword


class UnpipelinedKLoop(Rule):
    """## What it finds
    A loop that loads tiles and feeds `tl.dot`, compiled with `num_stages=1` (launch option, every
    autotune config, or `tl.range(..., num_stages=1)`).

    ## Why it is slow
    With one stage the software pipeliner is off: each iteration waits for its global loads before
    the MMA starts, so memory latency is exposed on every K step. With 2-4 stages Triton issues
    `cp.async` (sm_80) / async copies (sm_90) for the next tiles while the current ones multiply
    (a 128x128x64 fp16 matmul with 4 warps: ns=1 has no `cp.async`; ns=3 has 48).

    ## Example
    ```python
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_stages=1)
    ```

    ## Use instead
    ```python
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_stages=3)
    ```

    ## Known false positives
    None known wrong in 15 findings on TritonBench (LightLLM-style attention forwards and
    flash-linear-attention chunk kernels launched with `num_stages=1`). Doubtful as advice, and
    still reported: a loop over a head dimension (`range(tl.cdiv(K, BK))` with
    `BK = min(64, triton.next_power_of_2(K))`) runs one or two iterations, so there is little to
    overlap; and a backward kernel with nested loops whose author chose one stage to fit its tiles
    in shared memory.

    ## Targets
    cuda, hip.

    ## References
    Triton `tl.range` documentation (`num_stages`).
    """

    code = "TRI006"
    name = "unpipelined-k-loop"
    message = "K-loop with tl.dot compiled with num_stages=1: loads are not pipelined"
    fix_title = "Use num_stages=3 (or autotune over 2-4)"
    targets = ("cuda", "hip")

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            k_loops = [loop for loop in kernel.loops if isinstance(loop, ast.For) and _feeds_dot(kernel, loop)]
            if not k_loops:
                continue
            for loop in k_loops:
                stages = keyword(loop.iter, "num_stages") if isinstance(loop.iter, ast.Call) else None
                if isinstance(stages, ast.Constant) and stages.value == 1:
                    yield self.hit(stages)
            if any(isinstance(loop.iter, ast.Call) and keyword(loop.iter, "num_stages") for loop in k_loops):
                continue  # the loop's own num_stages wins over the launch option
            for v in ctx.failing(kernel, lambda v: v.int("num_stages") == 1):
                yield self.hit(v.where("num_stages"))


def _feeds_dot(kernel, loop) -> bool:
    inside = {id(n) for n in ast.walk(loop)}
    return any(id(c) in inside for c in kernel.calls("dot")) and any(id(c) in inside for c in kernel.calls("load"))
