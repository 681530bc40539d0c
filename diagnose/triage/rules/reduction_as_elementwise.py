from __future__ import annotations

import ast

from diagnose.extrema import elementwise_calls, elementwise_name
from diagnose.triage.rule import Rule


class ReductionAsElementwise(Rule):
    """## What it finds
    `tl.max` or `tl.min` called with two values, where the elementwise `tl.maximum` / `tl.minimum` is
    meant: `tl.max(x, 0.0)`, `tl.max(0, x)`, `tl.min(x_scaled, 127.0)`. A call counts when it has exactly
    two positional arguments and no keyword, and either its first argument is a number literal or its
    second is a float literal (or `float("inf")`).

    ## Why it is slow
    It does not compile: `tl.max(input, axis=None, ...)` is a reduction whose second positional argument
    is the axis, so `tl.max(x, 0.0)` asks for axis `0.0` and `tl.max(0, x)` reduces the number 0 over the
    axis `x`. Triton fails to compile both, and the interpreter rejects them too ("'float' object cannot
    be interpreted as an integer", "'int' object has no attribute 'type'"). LLM-written first versions
    write it for a ReLU or a clamp (17 calls in 13 of 801 TritonBench files).

    ## Example
    ```python
    @triton.jit
    def relu_clamp(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, tl.min(tl.max(x, 0.0), 6.0), mask=offs < n)
    ```

    ## Use instead
    ```python
        tl.store(y_ptr + offs, tl.minimum(tl.maximum(x, 0.0), 6.0), mask=offs < n)
    ```

    ## Known false positives
    None known: only literals decide (a number has no axis to reduce, an axis is never a float), so
    `tl.max(x, 0)`, `tl.max(x, axis=1)` and `tl.max(x, AXIS)` are never reported. Zero findings on
    FlagGems, Liger-Kernel, TritonBench-G, vLLM and unsloth; 17 in 13 of the LLM-written TritonBench
    files, every one a compile error. A call whose second argument is some other expression that cannot be an axis
    (`tl.max(x, y * 0.5)`) is not reported either.

    ## Targets
    cuda, hip, ascend.

    ## References
    `triton.language.max`, `triton.language.maximum` and `triton.language.minimum` documentation.
    """

    code = "TRI031"
    name = "reduction-as-elementwise"
    message = "`{call}` reduces over an axis; the elementwise {what} is `{fix}`; compilation fails"
    fix_title = "Use tl.maximum / tl.minimum for an elementwise maximum / minimum"
    severity = "error"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for call in elementwise_calls(kernel.node, kernel.qualname):
                name = elementwise_name(call, kernel.qualname)
                fix = ast.unparse(call.func.value) + "." + name
                yield self.hit(call, call=ast.unparse(call), what=name, fix=fix)
