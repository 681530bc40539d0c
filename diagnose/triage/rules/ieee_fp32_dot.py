from __future__ import annotations

import ast

from diagnose.triage.rule import Rule


class IeeeFp32Dot(Rule):
    """## What it finds
    `tl.dot(..., input_precision="ieee")` (or the older `allow_tf32=False`).

    ## Why it is slow
    NVIDIA tensor cores take fp32 operands only as tf32. With `ieee` precision Triton lowers the dot
    to FMA instructions on every NVIDIA target (notes/triton-internals.md 3c: 128 to 8192
    `fma.rn.f32`, no `mma`/`wgmma`): an order of magnitude below tensor-core throughput.

    ## Example
    ```python
    acc = tl.dot(a, b, acc, input_precision="ieee")
    ```

    ## Use instead
    ```python
    acc = tl.dot(a, b, acc)                            # tf32 on fp32 inputs
    acc = tl.dot(a, b, acc, input_precision="tf32x3")  # near-fp32 accuracy on tensor cores
    ```
    or cast the operands to bf16/fp16 where the accuracy budget allows.

    ## Targets
    cuda (gfx942 has fp32 MFMA, so AMD is not affected).

    ## References
    notes/triton-internals.md section 3c; `tl.dot` documentation (`input_precision`).
    """

    code = "TRI004"
    name = "ieee-fp32-dot"
    message = "`tl.dot` with {setting} runs on FMA units, not tensor cores"
    fix_title = 'Use the default tf32 or input_precision="tf32x3", or cast operands to bf16'
    targets = ("cuda",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for call in kernel.calls("dot"):
                for kw in call.keywords:
                    v = kw.value
                    if not isinstance(v, ast.Constant):
                        continue
                    if kw.arg == "input_precision" and v.value == "ieee":
                        yield self.hit(v, setting='input_precision="ieee"')
                    elif kw.arg == "allow_tf32" and v.value is False:
                        yield self.hit(v, setting="allow_tf32=False")
