from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword


class Int64IndexArithmetic(Rule):
    """## What it finds
    Index values cast to or created as int64 in a kernel: `.to(tl.int64)`, `tl.cast(x, tl.int64)`,
    `tl.zeros/full(..., dtype=tl.int64)`.

    ## Why it is slow
    On Atlas A2/A3 the vector unit has no int64 add and no int64 (or int32) compare: int64 block
    arithmetic falls back to the scalar unit, one element at a time (notes/ascend.md R8; the
    layernorm profile shows scalar time near 60% against under 10% vector). The GPU habit of
    promoting `program_id` to int64 against overflow makes every offset computed from it int64.

    ## Example
    ```python
    row = tl.program_id(0).to(tl.int64)
    offs = row * stride + tl.arange(0, BLOCK)
    ```

    ## Use instead
    ```python
    row = tl.program_id(0)                       # int32 while n_rows * stride < 2**31
    offs = row * stride + tl.arange(0, BLOCK)
    ```
    Keep int64 only where values can overflow int32 (addresses of huge tensors, prefix sums).

    ## Targets
    ascend.

    ## References
    notes/ascend.md R8; notes/triton-internals.md 3f (what becomes i64).
    """

    code = "ASC007"
    name = "int64-index-arithmetic"
    message = "int64 index arithmetic (`{expr}`): vector int64 add and compare fall back to scalar"
    fix_title = "Keep index arithmetic in int32 where values fit"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for call in kernel.calls(".to", "cast", "zeros", "full"):
                name = kernel.qualname(call.func)
                if name is None:
                    dtype = call.args[0] if call.args else keyword(call, "dtype")
                elif name.endswith(".cast"):
                    dtype = keyword(call, "dtype", 1)
                else:
                    dtype = keyword(call, "dtype", 1 if name.endswith("zeros") else 2)
                if dtype is not None and kernel.qualname(dtype) in ("triton.language.int64", "triton.language.uint64"):
                    yield self.hit(call, expr=ast.unparse(call))
