from __future__ import annotations

import ast
import copy
import re

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import pointer_of


class MultiPassRowReload(Rule):
    """## What it finds
    The same pointer expression loaded in two or more sibling loops over the same range: a row read
    from memory once per pass (max, then sum, then normalize).

    ## Why it is slow
    Each pass streams the whole row from HBM again, so a memory-bound kernel moves 2-3x the bytes it
    needs. When the row fits in one block it can stay in registers (one load, `BLOCK =
    next_power_of_2(n_cols)`); when it does not, online algorithms (online softmax, Welford) fuse the
    statistics passes so only the final pass re-reads.

    ## Example
    ```python
    for start in range(0, n_cols, BLOCK):
        m = tl.maximum(m, tl.load(row + start + cols, mask=start + cols < n_cols, other=-inf))
    for start in range(0, n_cols, BLOCK):
        s += tl.exp(tl.load(row + start + cols, mask=start + cols < n_cols, other=-inf) - mx)
    ```

    ## Use instead
    ```python
    cols = tl.arange(0, BLOCK)                      # BLOCK = next_power_of_2(n_cols)
    x = tl.load(row + cols, mask=cols < n_cols, other=-float("inf"))
    y = tl.exp(x - tl.max(x, 0))
    tl.store(out + cols, y / tl.sum(y, 0), mask=cols < n_cols)
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 02-fused-softmax; notes/ascend.md R11 (fuse multi-pass algorithms when the row
    fits a block).
    """

    code = "TRI007"
    name = "multi-pass-row-reload"
    message = "`{pointer}` is loaded again in pass {n} over the same range (first load at line {first}); the row is read {n} times"
    fix_title = "Keep the row in registers, or fuse the passes with an online algorithm"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            first: dict[tuple, tuple[ast.For, ast.Call, int]] = {}
            for loop in kernel.loops:
                if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name):
                    continue
                scope = (id(kernel.parent.get(loop)), ast.dump(loop.iter))
                local = _assigned_in(loop)
                for load in kernel.calls("load"):
                    ptr = pointer_of(load)
                    if ptr is None or kernel.enclosing_loop(load) is not loop:
                        continue
                    key = (scope, _normalized(ptr, local, loop.target.id))
                    if key not in first:
                        first[key] = (loop, load, 1)
                        continue
                    seen_loop, seen_load, passes = first[key]
                    if seen_loop is loop:
                        continue
                    first[key] = (loop, seen_load, passes + 1)
                    yield self.hit(load, secondary=(seen_load,), confidence="high" if passes >= 2 else None,
                                   pointer=ast.unparse(ptr), n=passes + 1, first=seen_load.lineno)


def _assigned_in(loop: ast.For) -> dict[str, ast.expr]:
    out = {}
    for node in ast.walk(loop):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _normalized(ptr: ast.expr, local: dict[str, ast.expr], var: str) -> str:
    """The pointer's text with names assigned in the loop inlined once and the loop variable renamed,
    so `x_row + off + cols` matches `x_row + start + cols` in the next loop."""

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node):
            return copy.deepcopy(local[node.id]) if node.id in local else node

    text = ast.unparse(Inline().visit(copy.deepcopy(ptr)))
    return re.sub(rf"\b{re.escape(var)}\b", "$i", text)
