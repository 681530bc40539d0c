from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword, pointer_of


class LoopInvariantLoad(Rule):
    """## What it finds
    A `tl.load` inside a loop whose address and mask do not change across iterations (nothing they
    depend on is assigned in the loop).

    ## Why it is slow
    triton-ascend keeps loads in source order and does not hoist them: the same data is moved from
    global memory into the UB on every iteration, and the DMA queue is busy with redundant copies
    instead of prefetching the next tile. Stage tiny inputs once outside the loop and hoist
    independent loads.

    ## Example
    ```python
    for start in range(0, n_cols, BLOCK):
        w = tl.load(w_ptr + cols)
        acc += tl.load(x_ptr + start + cols) * w
    ```

    ## Use instead
    ```python
    w = tl.load(w_ptr + cols)
    for start in range(0, n_cols, BLOCK):
        acc += tl.load(x_ptr + start + cols) * w
    ```

    ## Known false positives

    Not yet read against real code: on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials

    (825 files with kernels) it gave 31 findings at ascend:910b, none of them labelled yet, so its

    precision there is unknown.


    ## Targets
    ascend.

    ## References
    mindspore-ai/akg; Krusty84/triton-ascend-agent-dev-kit, skill schedule-loads (third party).
    """

    code = "ASC015"
    name = "loop-invariant-load"
    message = "`{pointer}` is loaded on every iteration but does not change in the loop; load it once before"
    fix_title = "Hoist the load above the loop"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for load in kernel.calls("load"):
                loop = kernel.enclosing_loop(load)
                ptr = pointer_of(load)
                if loop is None or ptr is None:
                    continue
                varying = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                used = kernel.sources(ptr)
                mask = keyword(load, "mask", 1)
                if mask is not None:
                    used |= kernel.sources(mask)
                if not used & varying:
                    yield self.hit(load, pointer=ast.unparse(ptr))
