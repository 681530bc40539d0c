from __future__ import annotations

from diagnose.blocks import block_params
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import is_device_helper


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

    ## Known false positives
    Two shapes of code that compiles were flagged (5 of 5 findings on FlagGems and TritonBench):
    a parameter annotated with the *string* `"tl.constexpr"` (Triton reads string annotations
    too), and a `@triton.jit` device helper whose parameters take the caller's constexprs. Both
    are accepted now: string annotations count, and a jit function this file does not launch that
    returns a value or is called by another jit function is not checked. Still possible: a helper
    that returns nothing and is only called from another file; such findings (kernels this file
    does not launch) carry medium confidence.

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
            if is_device_helper(ctx, kernel):
                continue  # a device function's parameters are constexpr when the caller's are
            # Not launched here: it may be a helper another file calls with constexprs.
            confidence = None if ctx.launches_of(kernel) else "medium"
            # A parameter the body assigns is a local there: annotating it would not help.
            found = [
                n
                for p, where in block_params(kernel.node, kernel.qualname).items()
                if p not in kernel.assigns
                for n in where
            ]
            for size in sorted(found, key=lambda n: (n.lineno, n.col_offset)):
                yield self.hit(size, confidence=confidence, param=size.id)
