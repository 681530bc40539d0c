from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import pointer_of

ATOMICS = ("atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor")


class SingleAddressAtomic(Rule):
    """## What it finds
    A `tl.atomic_add` (or max/min/...) whose address does not depend on the program id: every
    program of the grid updates the same location, typically to finish a reduction.

    ## Why it is slow
    Atomics to one address serialize in L2: with a grid of 10^5-10^6 programs the last program waits
    behind all the others, and the float result depends on their order (not deterministic). A
    two-stage reduction, each program writing its partial result to `partials[pid]` and a second
    small kernel (or `torch.sum`) reducing the partials, runs in parallel and is deterministic.

    ## Example
    ```python
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))
    ```

    ## Use instead
    ```python
    tl.store(partials_ptr + pid, tl.sum(x, axis=0))   # then reduce `partials` in a second pass
    ```

    ## Targets
    cuda, hip (on Ascend, with a grid of a few dozen cores, atomics are the recommended combine:
    notes/ascend.md R11).

    ## References
    CUDA C++ Programming Guide, atomic functions; notes/ascend.md R11.
    """

    code = "TRI014"
    name = "single-address-atomic"
    message = "every program does `tl.{op}` on the same address; write per-program partials and reduce them"
    fix_title = "Use a two-stage reduction over per-program partial results"
    targets = ("cuda", "hip")

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            atomics = kernel.calls(*ATOMICS)
            if not atomics:
                continue
            pid_names = {name for name, values in kernel.assigns.items()
                         if any(_has_program_id(kernel, v) for v in values)}
            for call in atomics:
                ptr = pointer_of(call)
                if ptr is None or kernel.is_block(ptr) or _has_program_id(kernel, ptr):
                    continue
                if kernel.sources(ptr) & pid_names:
                    continue  # sources() is transitive: pid_m = pid // n counts
                yield self.hit(call, op=kernel.qualname(call.func).rsplit(".", 1)[-1])


def _has_program_id(kernel, expr) -> bool:
    return any(isinstance(n, ast.Call) and kernel.qualname(n.func) == "triton.language.program_id"
               for n in ast.walk(expr))
