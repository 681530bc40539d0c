from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword, pointer_of


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

    ## Known false positives
    Measured on 28 findings (Liger-Kernel, FlagGems); none was a scalar reduction loop. Now
    accepted: row loops whose iterations load and reduce whole blocks, where the scalar load is a
    per-row statistic (`dw += rstd * tl.sum(x * dy)`); per-iteration temporaries that get one more
    term (`loss = ...; loss += beta * kl`), since the loop carries nothing; products and rescaling
    (`qk *= scale`, `loss = w * loss`), which are not sums; prefix sums that store every running
    value (a scan: `tl.cumsum` would be the advice, not `tl.sum`); decoupled look-back loops that
    spin on `volatile` flag loads or atomics; tuples built one load at a time (`indxs = indxs +
    (tl.load(p + i),)` in a `tl.static_range`, vLLM's triton_kernels `reduce_grouped`), which
    concatenate rather than add. Still misread: none known; a scan over a small count
    (experts) is not flagged even where a strided block load plus `tl.cumsum` would do.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 02-fused-softmax (block reductions); skills.sh ascend/agent-skills,
    triton-operator-performance-optim (scalar-heavy code on Ascend).
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
                scalar_loads = {
                    id(c)
                    for c in kernel.calls("load")
                    if kernel.enclosing_loop(c) is loop and (p := pointer_of(c)) is not None and not kernel.is_block(p)
                }
                if not scalar_loads or _not_a_reduction_loop(kernel, loop, inside):
                    continue
                carriers = {
                    n.targets[0].id
                    for n in inside
                    if isinstance(n, ast.Assign)
                    and isinstance(n.targets[0], ast.Name)
                    and _contains(n.value, scalar_loads)
                }
                for node in inside:
                    acc = _accumulated(node)
                    if acc is None or acc in kernel.block_names:
                        continue
                    if _reset_in(loop, acc, inside) or _stored_in(kernel, acc, inside):
                        continue  # a per-iteration temporary, or a running prefix (a scan)
                    if _contains(node.value, scalar_loads) or any(
                        isinstance(n, ast.Name) and n.id in carriers for n in ast.walk(node.value)
                    ):
                        yield self.hit(node, acc=acc)


def _accumulated(node: ast.AST) -> str | None:
    """`acc += v` or `acc = acc + v` (a sum; `qk *= scale` is not): the accumulator's name."""
    if (
        isinstance(node, ast.AugAssign)
        and isinstance(node.target, ast.Name)
        and isinstance(node.op, (ast.Add, ast.Sub))
    ):
        return node.target.id
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.BinOp)
        and isinstance(node.value.op, (ast.Add, ast.Sub))
        and any(isinstance(s, ast.Name) and s.id == node.targets[0].id for s in (node.value.left, node.value.right))
        and not any(isinstance(s, ast.Tuple) for s in (node.value.left, node.value.right))
    ):
        return node.targets[0].id
    return None


def _contains(expr: ast.AST, ids: set[int]) -> bool:
    return any(id(n) in ids for n in ast.walk(expr))


def _not_a_reduction_loop(kernel, loop, inside) -> bool:
    """Loops whose scalar loads are not the work: the iteration also loads a block (a row loop that
    reads per-row scalars such as rstd next to the row), or it spins on flags (volatile loads,
    atomics: a decoupled look-back must read one word at a time)."""
    ids = {id(n) for n in inside}
    for call in kernel.calls("load"):
        if id(call) in ids:
            ptr = pointer_of(call)
            if (ptr is not None and kernel.is_block(ptr)) or keyword(call, "volatile") is not None:
                return True
    return any(
        id(c) in ids
        for c in kernel.calls("atomic_add", "atomic_cas", "atomic_xchg", "atomic_max", "atomic_min", "atomic_or")
    )


def _reset_in(loop, acc: str, inside) -> bool:
    """`acc` is assigned afresh inside the loop (`loss = ...; loss += kl`): not carried across
    iterations, so the loop reduces nothing into it."""
    for node in inside:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _accumulated(node) is None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == acc for t in targets for n in ast.walk(t)):
                return True
    return False


def _stored_in(kernel, acc: str, inside) -> bool:
    """Each running value is stored (a prefix sum): the advice to sum a block does not apply."""
    ids = {id(n) for n in inside}
    for call in kernel.calls("store"):
        value = keyword(call, "value", 1)
        if id(call) in ids and value is not None and acc in kernel.sources(value):
            return True
    return False
