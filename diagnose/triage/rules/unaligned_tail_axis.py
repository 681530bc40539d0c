from __future__ import annotations

import ast

from diagnose.triage.hosteval import TensorSpec
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import MEMORY_ACCESSES, arange_sizes, pointer_of

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
    Read against all 13 findings on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (`benchmarks/triage_precision/ASC004.csv`; 0 true, 9 false, 4 debatable). The false ones were
    all tensors with an unaligned last dimension that the kernel never touches as a tile: per-row
    statistics of shape (n, 3) written as three scalars (`rstd + row * stride + 1`), a radix-sort
    histogram addressed with flat offsets. A tensor now counts only when some load or store
    addresses it with a column axis (`[None, :]`). Still reported, debatable: the
    neighbourhood-attention weights (.., 7) stored as [BLOCK_M, 7] tiles (the op's layout; a flat
    store would avoid the padding) and a `BLOCK_N=1` fallback tile. No true positive seen on this
    corpus: the rule fires on KernelBench-style inputs (`get_inputs()` shapes) far more than on
    library code.

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
            tiled = _tiled_params(kernel)
            for record in launch.records:
                if (record.group or "").startswith("test"):
                    continue  # test_* groups are small correctness shapes, not the ones that are timed
                named = dict(zip(kernel.params, record.args)) | record.kwargs
                for param, value in named.items():
                    if isinstance(value, TensorSpec) and len(value.shape) >= 2 and param in nodes and param in tiled:
                        tail = value.shape[-1]
                        if isinstance(tail, int) and (tail * value.itemsize) % ALIGN:
                            yield self.hit(
                                nodes[param], what=f"tensor `{param}` {tuple(value.shape)}", bytes=tail * value.itemsize
                            )


def _tiled_params(kernel) -> set[str]:
    """Pointer parameters the kernel reads or writes as a tile with a column axis (an address with a
    `[None, :]` term). A tensor touched only through scalar or 1-D offsets (`rstd + row * 3 + 1`, a
    histogram's flat bin offset) is moved element by element or as a flat run: its shape's tail
    is never a UB row, so nothing is padded."""
    out: set[str] = set()
    for call in kernel.calls(*MEMORY_ACCESSES):
        ptr = pointer_of(call)
        if ptr is None:
            continue
        names = kernel.sources(ptr)
        exprs = [ptr] + [v for name in names for v in kernel.assigns.get(name, ())]
        if any(isinstance(n, ast.Subscript) and _column_axis(n.slice) for e in exprs for n in ast.walk(e)):
            out |= names & set(kernel.params)
    return out


def _column_axis(index) -> bool:
    """`[None, :]`, `[None, None, :]`: the last axis of a tile of two or more axes."""
    elts = index.elts if isinstance(index, ast.Tuple) else []
    return (
        len(elts) >= 2
        and isinstance(elts[-1], ast.Slice)
        and any(isinstance(e, ast.Constant) and e.value is None for e in elts[:-1])
    )


def _inner_axis_aranges(kernel) -> set[str]:
    """Size names of aranges used as the last axis: `cols[None, :]` where cols = tl.arange(0, BLOCK_N)."""
    inner_vars = set()
    for node in ast.walk(kernel.node):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and isinstance(node.slice, ast.Tuple)
            and len(node.slice.elts) == 2
        ):
            first = node.slice.elts[0]
            if isinstance(first, ast.Constant) and first.value is None:
                inner_vars.add(node.value.id)
    out = set()
    for var in inner_vars:
        for value in kernel.assigns.get(var, ()):
            for call in ast.walk(value):
                if (
                    isinstance(call, ast.Call)
                    and kernel.qualname(call.func) == "triton.language.arange"
                    and len(call.args) == 2
                    and isinstance(call.args[1], ast.Name)
                ):
                    out.add(call.args[1].id)
    return out
