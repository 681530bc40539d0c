from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword, pointer_of


class UnmaskedLoadPastBound(Rule):
    """## What it finds
    A `tl.load`/`tl.store` without `mask=` whose offsets come from an index that the same kernel
    bounds-checks elsewhere (`offs < n`): the author knew the block can run past the end.

    ## Why it is slow
    It is a correctness hazard before a performance one: the last block reads (or writes) past the
    tensor. Out-of-bounds reads may fault or return garbage that flows into reductions; some authors
    drop masks deliberately for speed, which is only safe when the size is a multiple of the block.
    Low confidence: the size may be guaranteed by construction.

    ## Example
    ```python
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs)
    ```

    ## Use instead
    ```python
    y = tl.load(y_ptr + offs, mask=mask)
    ```
    or branch on a constexpr `EVEN_N` that the launcher sets when `n % BLOCK == 0`.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 01-vector-add (masks); `tl.load` documentation (`mask`, `boundary_check`).
    """

    code = "TRI017"
    name = "unmasked-load-past-bound"
    message = "`tl.{op}` has no mask, yet `{index}` is bounds-checked elsewhere; the last block may run past the end"
    fix_title = "Pass the same mask to this access"
    confidence = "low"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if kernel.calls("make_block_ptr", "make_tensor_descriptor"):
                continue
            bounded = _bounds_checked(kernel)
            if not bounded:
                continue
            for call in kernel.calls("load", "store"):
                op = kernel.qualname(call.func).rsplit(".", 1)[-1]
                position = 1 if op == "load" else 2
                if keyword(call, "mask", position) is not None or keyword(call, "boundary_check"):
                    continue
                if any(isinstance(a, ast.If) for a in kernel.ancestors(call)):
                    continue  # EVEN_N-style specializations drop masks on purpose
                ptr = pointer_of(call)
                hit = sorted(kernel.sources(ptr) & bounded) if ptr is not None else []
                if hit:
                    yield self.hit(call, op=op, index=hit[0])


def _bounds_checked(kernel) -> set[str]:
    """Block names on the left of a `<`/`<=` comparison: indices the kernel masks somewhere."""
    out = set()
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.LtE)):
            out |= {n.id for n in ast.walk(node.left) if isinstance(n, ast.Name) and n.id in kernel.block_names}
    return out
