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
    amax case, together with a grid of 40 on a 40-core part).

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

    Not yet read against real code: on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials

    (825 files with kernels) it gave 91 findings at ascend:910b, none of them labelled yet, so its

    precision there is unknown.


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
                if _carried(stmt):
                    yield self.hit(call, op=kernel.qualname(call.func).rsplit(".", 1)[-1])


def _carried(stmt) -> bool:
    """`acc += ...` or `acc = f(acc, ...)`: the reduction feeds a loop-carried scalar."""
    if isinstance(stmt, ast.AugAssign):
        return True
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        name = stmt.targets[0].id
        return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.value))
    return False
