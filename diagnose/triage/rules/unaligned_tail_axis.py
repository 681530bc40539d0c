from __future__ import annotations

import ast

from diagnose.triage.hosteval import TensorSpec
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import arange_sizes

ALIGN = 32


class UnalignedTailAxis(Rule):
    """## What it finds
    A 2-D access whose last (tail) axis is not a multiple of 32 bytes: a tile's inner block
    (`cols[None, :]` with BLOCK_N * 4 B not a multiple of 32), or a tensor passed to a kernel whose
    last dimension is unaligned (e.g. shape (2048, 3) fp32, from `get_inputs()`).

    ## Why it is slow
    The unified buffer wants the tail axis 32-byte aligned for vector kernels (512 B for cube
    kernels); otherwise the compiler pads each row, so a (2048, 3) tensor moves and computes on
    (2048, 8), and unaligned 2-D strides add a size-1 axis that can overflow the UB.

    ## Example
    ```python
    x = tl.load(x_ptr + rows[:, None] * 3 + tl.arange(0, 4)[None, :], mask=...)   # 16 B rows
    ```

    ## Use instead
    Load the data as 1-D when it is contiguous (`offs = pid * BLOCK + tl.arange(0, BLOCK)` over the
    flat numel), or borrow an axis with reshape/trans so the tail becomes long.

    ## Known false positives

    Not yet read against real code: on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials

    (825 files with kernels) it gave 13 findings at ascend:910b, none of them labelled yet, so its

    precision there is unknown.


    ## Targets
    ascend.

    ## References
    triton-ascend programming guide (`docs/en/programming_guide.md`, tail-axis alignment); migration
    guide, "Why Does the UBSIZE Out of Memory Error Occur?".
    """

    code = "ASC004"
    name = "unaligned-tail-axis"
    message = "{what} has a {bytes} B tail axis, not a multiple of 32 B; the NPU pads every row"
    fix_title = "Access the data as 1-D, or reshape so the tail axis is 32-byte aligned"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            inner = _inner_axis_aranges(kernel)
            for v in ctx.variants(kernel):
                for size, where, name in arange_sizes(ctx, kernel, v):
                    if name in inner and (size * 4) % ALIGN:
                        yield self.hit(where, what=f"tile `{name}`={size}", bytes=size * 4)
        for launch in ctx.launches:
            kernel = ctx.kernels[launch.kernel]
            nodes = launch.arg_nodes(kernel.params)
            for record in launch.records:
                if (record.group or "").startswith("test"):
                    continue  # test_* groups are small correctness shapes, not the ones that are timed
                named = dict(zip(kernel.params, record.args)) | record.kwargs
                for param, value in named.items():
                    if isinstance(value, TensorSpec) and len(value.shape) >= 2 and param in nodes:
                        tail = value.shape[-1]
                        if isinstance(tail, int) and (tail * value.itemsize) % ALIGN:
                            yield self.hit(nodes[param], what=f"tensor `{param}` {tuple(value.shape)}",
                                           bytes=tail * value.itemsize)


def _inner_axis_aranges(kernel) -> set[str]:
    """Size names of aranges used as the last axis: `cols[None, :]` where cols = tl.arange(0, BLOCK_N)."""
    inner_vars = set()
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
            first = node.slice.elts[0]
            if isinstance(first, ast.Constant) and first.value is None:
                inner_vars.add(node.value.id)
    out = set()
    for var in inner_vars:
        for value in kernel.assigns.get(var, ()):
            for call in ast.walk(value):
                if isinstance(call, ast.Call) and kernel.qualname(call.func) == "triton.language.arange" \
                        and len(call.args) == 2 and isinstance(call.args[1], ast.Name):
                    out.add(call.args[1].id)
    return out
