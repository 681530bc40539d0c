from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import arange_bounds, keyword

SHAPED = ("zeros", "full")


class BlockSizeNotConstexpr(Rule):
    """## What it finds
    A kernel parameter used as a block size (`tl.arange(0, BLOCK)`, `tl.zeros([BLOCK], ...)`) that is
    not annotated `tl.constexpr`.

    ## Why it is slow
    It does not compile: block shapes must be compile-time constants, and a plain parameter is a
    runtime value, so Triton fails with "arange's arguments must be of type tl.constexpr".
    Annotating it also lets the compiler fold it and specialize the kernel per block size.

    ## Example
    ```python
    @triton.jit
    def k(x_ptr, n, BLOCK):
        offs = tl.arange(0, BLOCK)
    ```

    ## Use instead
    ```python
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    `triton.language.constexpr` and `tl.arange` documentation.
    """

    code = "TRI028"
    name = "block-size-not-constexpr"
    message = "`{param}` sizes a block but is not annotated tl.constexpr; compilation fails"
    fix_title = "Annotate the parameter with tl.constexpr"
    severity = "error"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            runtime = set(kernel.params) - kernel.constexprs - set(kernel.assigns)
            for call in kernel.calls("arange", *SHAPED):
                if kernel.qualname(call.func).endswith("arange"):
                    sizes = arange_bounds(call)
                else:
                    shape = keyword(call, "shape", 0)
                    sizes = shape.elts if isinstance(shape, (ast.List, ast.Tuple)) else [shape]
                for size in sizes:
                    if isinstance(size, ast.Name) and size.id in runtime:
                        yield self.hit(size, param=size.id)
