from __future__ import annotations

import ast

from diagnose.triage.rule import Rule

HINTS = ("multiple_of", "max_contiguous")


class MultipleOfOnRawArgument(Rule):
    """## What it finds
    `tl.multiple_of(arg, n)` or `tl.max_contiguous(arg, n)` applied to a kernel argument itself.

    ## Why it is slow
    On a function argument the hint is a no-op: it sets an attribute on the block argument that never
    reaches TTIR, so the alignment analysis does not see it and loads stay 32-bit
    (an fp32 copy with BLOCK 1024 and 4 warps on sm_90: `tl.multiple_of(start, 16)` on the raw
    argument gives 8 x 32-bit loads; on `start + pid * BLOCK` it gives 2 x 128-bit). Divisibility
    of arguments comes from the JIT's specialization (values divisible by 16 get `tt.divisibility`),
    not from the hint.

    ## Example
    ```python
    start = tl.multiple_of(start, 16)
    offs = start + pid * BLOCK + tl.arange(0, BLOCK)
    ```

    ## Use instead
    ```python
    offs = tl.multiple_of(start + pid * BLOCK, 16) + tl.arange(0, BLOCK)
    ```

    ## Known false positives
    None known wrong in 7 findings on FlagGems (flash attention's `tl.multiple_of(q_batch_stride,
    d * h)` on raw stride arguments). Doubtful as advice, and still reported: a hint on a
    parameter of a `@triton.jit` device helper (`apply_dropout(P, row_start, ...)`) is dropped the
    same way, but after inlining the caller's value (`m_block * BLOCK_M`) usually carries the
    divisibility already, so there is nothing to gain.

    ## Targets
    cuda, hip.

    ## References
    Triton `ir.cc`: `set_attr` on FuncOp block arguments.
    """

    code = "TRI002"
    name = "multiple-of-on-raw-argument"
    message = "`tl.{hint}` on kernel argument `{param}` has no effect; hint a computed value instead"
    fix_title = "Apply the hint to a value computed from the argument"
    confidence = "high"
    targets = ("cuda", "hip")

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            hint_calls = kernel.calls(*HINTS)
            hint_ids = {id(c) for c in hint_calls}
            for call in hint_calls:
                arg = call.args[0] if call.args else None
                if not isinstance(arg, ast.Name) or arg.id not in kernel.params or arg.id in kernel.constexprs:
                    continue
                # Reassigning the argument from the hint itself is still the raw argument.
                if all(isinstance(v, ast.Call) and id(v) in hint_ids for v in kernel.assigns.get(arg.id, ())):
                    yield self.hit(call, hint=kernel.qualname(call.func).rsplit(".", 1)[-1], param=arg.id)
