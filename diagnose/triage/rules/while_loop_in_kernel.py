from __future__ import annotations

import ast

from diagnose.triage.rule import Rule


class WhileLoopInKernel(Rule):
    """## What it finds
    A `while` loop inside a `@triton.jit` function.

    ## Why it is slow
    triton-ascend does not support `while` in kernels well: data-dependent loops cannot be tiled,
    multibuffered or blockified, and may fail to compile. A `for` loop with a constexpr (or
    argument) bound plus an `if` on the exit condition compiles to a counted loop the NPU pipelines.

    ## Example
    ```python
    while start < n:
        ...
        start += BLOCK
    ```

    ## Use instead
    ```python
    for start in range(0, n, BLOCK):
        ...
    ```

    ## Targets
    ascend.

    ## References
    notes/ascend.md R9 (AKG `suggestion_docs.md`: "while is unsupported").
    """

    code = "ASC009"
    name = "while-loop-in-kernel"
    message = "`while` loop in a kernel; triton-ascend needs counted `for` loops"
    fix_title = "Rewrite as a for loop with a fixed bound and an if on the exit condition"
    severity = "error"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for loop in kernel.loops:
                if isinstance(loop, ast.While):
                    yield self.hit(loop)
