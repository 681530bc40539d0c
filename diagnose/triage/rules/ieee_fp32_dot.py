from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword


class IeeeFp32Dot(Rule):
    """## What it finds
    `tl.dot(..., input_precision="ieee")` (or the older `allow_tf32=False`). The setting only
    matters for fp32 operands: a dot whose operand is explicitly 16-bit, 8-bit or fp64 in the kernel
    (`p.to(tl.float16)` above the dot, a typed `tl.zeros`, through `tl.trans`) is not flagged.

    ## Why it is slow
    NVIDIA tensor cores take fp32 operands only as tf32. With `ieee` precision Triton lowers the dot
    to FMA instructions on every NVIDIA target (sm_80 and sm_90: 128 to 8192 `fma.rn.f32`, no
    `mma`/`wgmma`): an order of magnitude below tensor-core throughput.

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

    ## Known false positives
    Operand types usually follow the caller's tensors (`tl.load` of a pointer argument, `x.to(y.dtype)`),
    which triage cannot see, so a dtype-generic kernel is flagged as if it ran on fp32. That is right
    for fp32 callers (TritonBench's linear-attention kernels, tested on fp32) and wrong when the kernel
    only ever gets fp16/bf16: still misread are FlagGems' flash attention (the fp16/bf16 assert is in
    another file) and a chunked-attention kernel whose only caller passes fp16; there the flag is a
    no-op. Debatable rather than false: op libraries (FlagGems mm/bmm/addmm/conv) that keep
    `allow_tf32=False` on purpose to match torch's fp32 matmul numerics, triangular-mask dots that
    compute a cumsum on explicit fp32 (tf32 would round the summands; only tf32x3 fits), and vendor
    backend copies (Ascend, Cambricon, MUSA) triaged for cuda. Measured on 25 labelled findings of 135
    on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (11 true, 3 false, 11 debatable).

    ## Targets
    cuda (gfx942 has fp32 MFMA, so AMD is not affected).

    ## References
    `tl.dot` documentation (`input_precision`).
    """

    code = "TRI004"
    name = "ieee-fp32-dot"
    message = "`tl.dot` with {setting} runs on FMA units, not tensor cores, when its operands are fp32"
    fix_title = 'Use the default tf32 or input_precision="tf32x3", or cast operands to bf16'
    targets = ("cuda",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for call in kernel.calls("dot"):
                operands = [call.args[i] if len(call.args) > i else keyword(call, name)
                            for i, name in enumerate(("input", "other"))]
                if any(operand_dtype(kernel, op) in NOT_FP32 for op in operands if op is not None):
                    continue  # 16-bit, 8-bit or fp64 operands: there is no tf32 to turn off
                for kw in call.keywords:
                    v = kw.value
                    if not isinstance(v, ast.Constant):
                        continue
                    if kw.arg == "input_precision" and v.value == "ieee":
                        yield self.hit(v, setting='input_precision="ieee"')
                    elif kw.arg == "allow_tf32" and v.value is False:
                        yield self.hit(v, setting="allow_tf32=False")


NOT_FP32 = {"float16", "bfloat16", "float64", "int8", "uint8", "float8e4nv", "float8e5", "float8e4b15",
            "float8e4b8", "float8e5b16"}
SHAPE_ONLY = {"trans", "permute", "reshape", "view", "broadcast_to", "expand_dims"}


def operand_dtype(kernel, expr: ast.AST, depth: int = 4) -> str | None:
    """The element type (`"float16"`, `"float32"`, ...) an expression is known to have from explicit
    casts and typed constructors in the kernel, or None. `x.to(y.dtype)` is unknown: it follows the
    caller's tensors."""
    if depth == 0:
        return None
    if isinstance(expr, ast.Call):
        name = kernel.qualname(expr.func) or ""
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "to" and not name.startswith("triton."):
            return _dtype_name(kernel, expr.args[0] if expr.args else keyword(expr, "dtype"))
        if name == "triton.language.cast":
            return _dtype_name(kernel, expr.args[1] if len(expr.args) > 1 else keyword(expr, "dtype"))
        if name in ("triton.language.zeros", "triton.language.full"):
            return _dtype_name(kernel, keyword(expr, "dtype", 2 if name.endswith("full") else 1))
        short = name.rsplit(".", 1)[-1] if name.startswith("triton.language.") else \
            expr.func.attr if isinstance(expr.func, ast.Attribute) else None
        if short in SHAPE_ONLY and (expr.args or isinstance(expr.func, ast.Attribute)):
            inner = expr.args[0] if name.startswith("triton.language.") else expr.func.value
            return operand_dtype(kernel, inner, depth - 1)
        return None
    if isinstance(expr, ast.Attribute) and expr.attr == "T":
        return operand_dtype(kernel, expr.value, depth - 1)
    if isinstance(expr, ast.Name):
        values = kernel.assigns.get(expr.id, ())
        # the latest assignment above the use (`p = p.to(tl.float16)` right before the dot), else all
        above = [v for v in values if v.lineno < expr.lineno]
        if above:
            values = [max(above, key=lambda v: (v.lineno, v.col_offset))]
        found = {operand_dtype(kernel, v, depth - 1) for v in values}
        return found.pop() if len(found) == 1 else None
    return None


def _dtype_name(kernel, node: ast.AST | None) -> str | None:
    name = kernel.qualname(node) if node is not None else None
    if name and name.startswith("triton.language."):
        return name.rsplit(".", 1)[-1]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}.get(node.value, node.value)
    return None
