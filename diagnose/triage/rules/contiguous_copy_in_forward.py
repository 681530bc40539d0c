from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import host_calls

RELAYOUT_CALLS = {"t", "transpose", "permute", "expand", "swapaxes", "movedim", "flip"}
RELAYOUT_ATTRS = {"T", "mT", "H", "mH"}


class ContiguousCopyInForward(Rule):
    """## What it finds
    `.contiguous()` on a transposed, permuted or expanded tensor in a launcher or `ModelNew.forward`.

    ## Why it is slow
    On a non-contiguous view `.contiguous()` launches a copy kernel that reads and writes the whole
    tensor on every call, often costing as much as the Triton kernel itself. The kernel can read the
    view directly through its strides (`x.stride(0)`, `x.stride(1)`), and weights can be laid out once
    in `__init__`.

    ## Example
    ```python
    def forward(self, x):
        w = self.weight.t().contiguous()
        matmul_kernel[grid](x, w, out, ...)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        w = self.weight.t()                          # a view; pass its strides
        matmul_kernel[grid](x, w, out, ..., w.stride(0), w.stride(1))
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    PyTorch `Tensor.contiguous`; notes/ascend.md R12 (contiguous 1-D access for elementwise ops is
    the exception: there the copy can pay off, measure).
    """

    code = "TRI013"
    name = "contiguous-copy-in-forward"
    message = "`.contiguous()` after `{relayout}` copies the tensor on every call; pass strides instead"
    fix_title = "Pass the view's strides to the kernel, or lay the tensor out once in __init__"

    def check(self, ctx):
        for fn in ctx.hot_functions:
            for call in host_calls(fn):
                if not (isinstance(call.func, ast.Attribute) and call.func.attr == "contiguous"):
                    continue
                inner = call.func.value
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                        and inner.func.attr in RELAYOUT_CALLS:
                    yield self.hit(call, relayout=f".{inner.func.attr}()")
                elif isinstance(inner, ast.Attribute) and inner.attr in RELAYOUT_ATTRS:
                    yield self.hit(call, relayout=f".{inner.attr}")
