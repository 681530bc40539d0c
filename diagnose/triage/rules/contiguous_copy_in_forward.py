from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import host_calls

# Views whose `.contiguous()` copies. Not `flip`: torch.flip already returns a contiguous copy.
RELAYOUT_CALLS = {"t", "transpose", "permute", "expand", "swapaxes", "movedim"}
RELAYOUT_ATTRS = {"T", "mT", "H", "mH"}


class ContiguousCopyInForward(Rule):
    """## What it finds
    `.contiguous()` on a transposed, permuted or expanded tensor in a launcher or `ModelNew.forward`.
    Only fixed relayouts (literal axes: `.t()`, `.T`, `.transpose(0, 1)`, `.permute(0, 2, 1)`) count;
    axes computed from the caller's `dim` (`x.transpose(dim, -1)`, `torch.movedim(x, dim, -1)`,
    `out.permute(order)`) are the move-the-axis-last normalization and are not flagged.

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

    ## Known false positives
    Now accepted (all 6 false among 25 labelled findings on Liger-Kernel and FlagGems):
    `torch.flip(w, dims).contiguous()` (flip already returns a contiguous copy; the `.contiguous()` is
    a no-op) and `x.transpose(dim, -1).contiguous()` before a flat `.view(n_rows, n_cols)` (the
    identity for the default dim=-1; for other dims the row kernel needs the copy). The same
    axis-from-`dim` test also silences debatable findings: cumsum, sort and index_select/index_add
    moving a non-last axis last or restoring the caller's axis order, under a `dim` guard; that copy is
    real for a non-last axis, only a strided kernel would avoid it. Still flagged and debatable: literal
    relayouts taken only for some layouts (`if K > 1: x.view(M, N, K).transpose(1, 2).contiguous()` in
    a softmax over a middle dim, `if dim == 3: target.transpose(1, -1)`). `test_*` functions are skipped.

    ## Targets
    cuda, hip, ascend.

    ## References
    PyTorch `Tensor.contiguous`. On Ascend, contiguous 1-D access for elementwise ops is the
    exception: there the copy can pay off, measure (mindspore-ai/akg `suggestion_docs.md`).
    """

    code = "TRI013"
    name = "contiguous-copy-in-forward"
    message = "`.contiguous()` after `{relayout}` copies the tensor on every call; pass strides instead"
    fix_title = "Pass the view's strides to the kernel, or lay the tensor out once in __init__"

    def check(self, ctx):
        for fn in ctx.hot_functions:
            if fn.node.name.startswith("test"):
                continue  # a test function, not a hot path
            for call in host_calls(fn):
                if not (isinstance(call.func, ast.Attribute) and call.func.attr == "contiguous"):
                    continue
                inner = call.func.value
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr in RELAYOUT_CALLS
                ):
                    if _axis_from_caller(inner):
                        continue
                    yield self.hit(call, relayout=f".{inner.func.attr}()")
                elif isinstance(inner, ast.Attribute) and inner.attr in RELAYOUT_ATTRS:
                    yield self.hit(call, relayout=f".{inner.attr}")


def _axis_from_caller(relayout: ast.Call) -> bool:
    """`x.transpose(dim, -1)`, `torch.movedim(x, dim, -1)`, `x.permute(order)`: axes computed from the
    caller's `dim`, the "move the working axis last" normalization. For the default (last) axis the
    relayout is the identity and `.contiguous()` copies nothing; for another axis the copy is what
    gives a row kernel contiguous rows, and avoiding it means a different, strided kernel."""
    if relayout.func.attr not in ("transpose", "swapaxes", "movedim", "permute"):
        return False
    args = list(relayout.args)
    if isinstance(relayout.func.value, ast.Name) and relayout.func.value.id == "torch" and args:
        args = args[1:]  # torch.movedim(x, src, dst): the tensor is the first argument
    axes = [a for arg in args for a in (arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg])]
    return bool(axes) and any(not _literal_int(a) for a in axes)


def _literal_int(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int)
