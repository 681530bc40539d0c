from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import pointer_of


class ScalarLoopReduction(Rule):
    """## What it finds
    A reduction written as a Python loop of scalar loads and adds inside a kernel:
    `for i in range(n): acc += tl.load(ptr + i)`.

    ## Why it is slow
    Every iteration issues one 32-bit load and waits for it; nothing is vectorized and no thread
    other than the one computing `acc` does useful work. A block load plus `tl.sum` reads the same
    data with wide, coalesced accesses and a tree reduction across the warp.

    ## Example
    ```python
    acc = 0.0
    for i in range(0, n_cols):
        acc += tl.load(row_ptr + i)
    ```

    ## Use instead
    ```python
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(row_ptr + start + cols, mask=start + cols < n_cols, other=0.0)
    total = tl.sum(acc, axis=0)
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 02-fused-softmax (block reductions); notes/ascend.md R9 (scalar-heavy code).
    """

    code = "TRI008"
    name = "scalar-loop-reduction"
    message = "loop accumulates one scalar load per iteration into `{acc}`; load a block and use tl.sum"
    fix_title = "Load a block per iteration and reduce it with tl.sum"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for loop in kernel.loops:
                inside = list(ast.walk(loop))
                scalar_loads = {id(c) for c in kernel.calls("load")
                                if kernel.enclosing_loop(c) is loop
                                and (p := pointer_of(c)) is not None and not kernel.is_block(p)}
                if not scalar_loads:
                    continue
                carriers = {n.targets[0].id for n in inside if isinstance(n, ast.Assign)
                            and isinstance(n.targets[0], ast.Name) and _contains(n.value, scalar_loads)}
                for node in inside:
                    acc = _accumulated(node)
                    if acc is None or acc in kernel.block_names:
                        continue
                    if _contains(node.value, scalar_loads) or any(
                            isinstance(n, ast.Name) and n.id in carriers for n in ast.walk(node.value)):
                        yield self.hit(node, acc=acc)


def _accumulated(node: ast.AST) -> str | None:
    """`acc += v` or `acc = acc + v`: the accumulator's name."""
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.BinOp)
            and any(isinstance(s, ast.Name) and s.id == node.targets[0].id
                    for s in (node.value.left, node.value.right))):
        return node.targets[0].id
    return None


def _contains(expr: ast.AST, ids: set[int]) -> bool:
    return any(id(n) in ids for n in ast.walk(expr))
