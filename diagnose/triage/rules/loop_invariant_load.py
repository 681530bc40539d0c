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
    Read against 25 of its 31 findings on Liger-Kernel, FlagGems, TritonBench and the Triton
    tutorials (`benchmarks/triage_precision/ASC015.csv`). It now accepts:
    - `volatile=True` loads and spin-waits (`while flag == 0: flag = tl.load(p)`): the decoupled
      look-back of radix sort and randperm polls a flag another program writes; hoisting deadlocks;
    - loads under an `if` on the loop counter that picks one iteration: the `else` of `if t > 0:`
      (with `t = n - 1 - i`), the body of `if i == 0:`; a recurrence reads its initial state once.
      A condition on loaded data (`if y == ignore_index:`) still counts as every iteration.
    Still reported, debatable: scalar loads (a group's leading dimension and base pointers in the
    grouped-GEMM tutorial, a routing weight per unrolled tile) that are invariant but negligible
    next to the tile work of the same iteration.

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
                if used & varying:
                    continue
                if _is_true(keyword(load, "volatile")) or _spin_wait(kernel, load, loop):
                    continue  # polling a flag another program writes: the reload is the point
                if _once_per_loop(kernel, load, loop):
                    continue
                yield self.hit(load, pointer=ast.unparse(ptr))


def _is_true(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _spin_wait(kernel, load, loop) -> bool:
    """`while flag == 0: flag = tl.load(p)`: the loop's own condition reads what the load assigns."""
    if not isinstance(loop, ast.While):
        return False
    stmt = next((a for a in kernel.ancestors(load) if isinstance(a, ast.stmt)), None)
    targets = {n.id for t in getattr(stmt, "targets", []) for n in ast.walk(t) if isinstance(n, ast.Name)}
    return any(isinstance(n, ast.Name) and n.id in targets for n in ast.walk(loop.test))


def _once_per_loop(kernel, load, loop) -> bool:
    """The load sits under an `if` of the loop's counter (`if t > 0: ... else: tl.load(h0)` with
    `t = n - 1 - i`, `if i == 0:`): it runs on one iteration, the first or the last, not on every
    one. A condition on loaded data (`if y == ignore_index`) does not count."""
    if not isinstance(loop, ast.For):
        return False
    counters = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    loaded = kernel.loaded_names()
    derived = {
        name
        for name, values in kernel.assigns.items()
        if name not in loaded
        and any(kernel.enclosing_loop(v) is loop or v is loop.iter for v in values)
        and kernel.sources(ast.Name(id=name)) & counters
    }
    indices = counters | derived
    child = load
    for anc in kernel.ancestors(load):
        if anc is loop:
            return False
        if isinstance(anc, ast.If) and isinstance(anc.test, ast.Compare) and len(anc.test.ops) == 1:
            names = {n.id for n in ast.walk(anc.test) if isinstance(n, ast.Name)}
            in_else = any(child is s for s in anc.orelse)
            # `if i == 0:` runs its body once; `if t > 0: ... else:` runs its else once
            once = in_else != isinstance(anc.test.ops[0], ast.Eq)
            if once and names & indices and not names & loaded:
                return True
        child = anc
    return False
