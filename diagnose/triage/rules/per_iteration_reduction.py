from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword

REDUCE = ("sum", "max", "min")


class PerIterationReduction(Rule):
    """## What it finds
    A loop in a 1-D kernel that reduces its block to a scalar on every iteration
    (`acc += tl.sum(x, axis=0)`, `m = tl.maximum(m, tl.max(x, 0))`) instead of keeping a
    block-shaped accumulator and reducing once after the loop.

    ## Why it is slow
    A full reduction is a cross-lane tree plus a scalar result; doing it per iteration serializes the
    loop on that scalar and keeps the vector unit waiting. A tile-shaped running max/sum is an
    elementwise op per iteration, and one reduction at the end (29.05 -> 25.73 us on mindspore-ai/akg's
    amax case, together with a grid of 40 on a 40-core part). In triton-ascend's ttadapter IR each
    iteration of the scalar form is a `linalg.reduce`, a `tensor.extract` of the result to a scalar
    and a `tensor.insert` back for the add; the block form is one vector add.

    ## Example
    ```python
    acc = 0.0
    for start in range(0, n, BLOCK):
        acc += tl.sum(tl.load(p + start + cols, mask=start + cols < n, other=0.0), axis=0)
    ```

    ## Use instead
    ```python
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        acc += tl.load(p + start + cols, mask=start + cols < n, other=0.0)
    total = tl.sum(acc, axis=0)
    ```

    ## Known false positives
    Read against 25 findings on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (`benchmarks/triage_precision/ASC014.csv`). It now accepts, as the algorithm rather than a
    choice:
    - a running value read inside the loop by something other than its own update: the carry of a
      blocked scan (`tile = tl.cumsum(x, 0) + prefix; prefix += tl.sum(x, 0)`), exclusive offsets
      of MoE expert counts;
    - an update that rescales the accumulator (`d = d * tl.exp(m - m_new) + tl.sum(...)`, online
      softmax and logsumexp): deferring it needs a per-lane running max, another algorithm;
    - a reduction that is one term of a block-shaped update (`dx += -tl.sum(g * x) * x / n`);
    - a name rebound from this iteration's own block (`loss = y * ...; loss = tl.sum(loss)`).
    Still reported, and labelled true: plain scalar sums over column blocks (`sum_sq +=
    tl.sum(x * x)`), which Liger's and FlagGems' own Ascend ports write too, so expect this rule on
    Ascend-tuned code; its benefit rests on the AKG measurement and the IR shape above, not on a
    hardware run of ours.

    ## Targets
    ascend.

    ## References
    mindspore-ai/akg
    `akg_agents/benchmark/akg_kernels_bench/triton_ascend/docs/static_shape/reduction/reduction_amax_large.md`.
    """

    code = "ASC014"
    name = "per-iteration-reduction"
    message = "`tl.{op}` reduces the block to a scalar on every iteration; keep a block accumulator and reduce once"
    fix_title = "Accumulate a block-shaped value in the loop and reduce after it"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if kernel.is_2d:
                continue
            for call in kernel.calls(*REDUCE):
                loop = kernel.enclosing_loop(call)
                axis = keyword(call, "axis", 1)
                if loop is None or not (axis is None or (isinstance(axis, ast.Constant) and axis.value == 0)):
                    continue
                stmt = next((a for a in kernel.ancestors(call) if isinstance(a, ast.stmt)), None)
                if not _carried(stmt):
                    continue
                name = _target(stmt)
                if name is None or kernel.is_block(stmt.value):
                    continue  # `dX_row += ... * tl.sum(m * x) * x`: a block update, the sum is one term
                if _rescaled(stmt, name):
                    continue  # `d = d * tl.exp(m - m_new) + tl.sum(...)`: the online-softmax recurrence
                if _fresh_in_iteration(kernel, loop, stmt, name) or _read_in_loop(kernel, loop, name):
                    continue
                yield self.hit(call, op=kernel.qualname(call.func).rsplit(".", 1)[-1])


def _carried(stmt) -> bool:
    """`acc += ...` or `acc = f(acc, ...)`: the reduction feeds a loop-carried scalar."""
    if isinstance(stmt, ast.AugAssign):
        return True
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        name = stmt.targets[0].id
        return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.value))
    return False


def _target(stmt) -> str | None:
    target = stmt.target if isinstance(stmt, ast.AugAssign) else stmt.targets[0]
    return target.id if isinstance(target, ast.Name) else None


def _updates(stmt, name: str) -> bool:
    """`name += ...` or `name = f(name, ...)`."""
    return _carried(stmt) and _target(stmt) == name


def _rescaled(stmt, name: str) -> bool:
    """The update multiplies the accumulator by a factor (`l = l * alpha + tl.sum(...)`): a running
    sum rescaled by a running max. Deferring the reduction needs a per-lane max too, a different
    algorithm rather than a block accumulator."""
    value = stmt.value
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, (ast.Mult, ast.Div))
        and any(isinstance(side, ast.Name) and side.id == name for side in (n.left, n.right))
        for n in ast.walk(value)
    )


def _loop_statements(loop) -> list[ast.stmt]:
    return [n for n in ast.walk(loop) if isinstance(n, ast.stmt) and n is not loop]


def _fresh_in_iteration(kernel, loop, stmt, name: str) -> bool:
    """`name` is assigned afresh earlier in the same iteration (`loss = y * ...; loss = tl.sum(loss)`):
    nothing is carried from the previous iteration."""
    return any(
        isinstance(s, (ast.Assign, ast.AnnAssign))
        and s is not stmt
        and not _updates(s, name)
        and (s.lineno, s.col_offset) < (stmt.lineno, stmt.col_offset)
        and any(
            isinstance(t, ast.Name) and t.id == name for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        )
        for s in _loop_statements(loop)
    )


def _read_in_loop(kernel, loop, name: str) -> bool:
    """The running value is read inside the loop by something other than its own updates (a running
    prefix added to this block's cumsum, an offset): the per-iteration reduction is the algorithm."""
    for s in _loop_statements(loop):
        if _updates(s, name) or isinstance(s, (ast.For, ast.While, ast.If)):
            if isinstance(s, (ast.For, ast.While, ast.If)):
                test = s.iter if isinstance(s, ast.For) else s.test
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(test)):
                    return True
            continue
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(s)):
            return True
    return False
