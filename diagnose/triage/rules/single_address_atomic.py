from __future__ import annotations

import ast

from diagnose.triage.kernel import REDUCTIONS
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import is_program_id, keyword, pointer_of

ATOMICS = ("atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor")


class SingleAddressAtomic(Rule):
    """## What it finds
    A `tl.atomic_add` (or max/min/...) whose address does not depend on the program id: every
    program of the grid updates the same location, typically to finish a reduction. Flagged only
    when the address does not come from loaded data either and each program issues the atomic
    many times: with a block value (one atomic per element, all to the same address) or inside a
    loop (one per iteration).

    ## Why it is slow
    Atomics to one address serialize in L2: BLOCK atomics per program, times the grid, queue behind
    each other, and the float result depends on their order (not deterministic). Reducing the block
    first (`tl.sum`) leaves one atomic per program, which is cheap; a two-stage reduction, each
    program writing its partial result to `partials[pid]` and a second small kernel reducing them,
    is also deterministic.

    ## Example
    ```python
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(out_ptr, x, mask=mask)      # BLOCK atomics on one address
    ```

    ## Use instead
    ```python
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))  # one per program
    tl.store(partials_ptr + pid, tl.sum(x, axis=0))   # or: reduce `partials` in a second pass
    ```

    ## Known false positives
    Measured on 46 findings (FlagGems, Liger-Kernel), none of which issued more than one atomic
    per program to the address. Now accepted: one atomic per program after a block reduction
    (`tl.atomic_add(out, tl.sum(x))`, including the persistent grid-stride kernels that launch
    about one program per core), a last-block counter (`tl.atomic_add(counter, 1)`), histograms
    and scatters whose address is loaded data (`tl.atomic_add(freq + idx, 1)`), and program ids read
    through a vendor module (`tle.program_id`). Still misread: none known among the findings left.

    ## Targets
    cuda, hip (on Ascend, with a grid of a few dozen cores, atomics are the recommended combine:
    mindspore-ai/akg amin-atomic case study).

    ## References
    CUDA C++ Programming Guide, atomic functions.
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
            pid_names = {
                name for name, values in kernel.assigns.items() if any(_has_program_id(kernel, v) for v in values)
            }
            data = kernel.loaded_names()
            loads = {id(c) for c in kernel.calls("load")}
            for call in atomics:
                ptr = pointer_of(call)
                if ptr is None or kernel.is_block(ptr) or _has_program_id(kernel, ptr):
                    continue
                if kernel.sources(ptr) & (pid_names | data) or any(id(n) in loads for n in ast.walk(ptr)):
                    continue  # sources() is transitive: pid_m = pid // n counts; a loaded index scatters
                value = keyword(call, "val", 1)
                per_element = value is not None and _is_block_value(ctx, kernel, value)
                if per_element or kernel.enclosing_loop(call) is not None:
                    yield self.hit(call, op=kernel.qualname(call.func).rsplit(".", 1)[-1])


def _has_program_id(kernel, expr) -> bool:
    return any(is_program_id(n) for n in ast.walk(expr))


def _is_block_value(ctx, kernel, value) -> bool:
    """Whether an atomic's value is a block. `x[0]` is one element; a name bound to what a
    `@triton.jit` helper returns is a scalar when the helper returns reductions."""
    if (
        isinstance(value, ast.Subscript)
        and isinstance(value.slice, ast.Constant)
        and isinstance(value.slice.value, int)
    ):
        return False
    node = (
        value.func.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to"
        else value
    )  # x[0].to(tl.int32)
    if node is not value:
        return _is_block_value(ctx, kernel, node)
    if (
        isinstance(value, ast.Name)
        and kernel.assigns.get(value.id)
        and all(_helper_returns_scalars(ctx, v) for v in kernel.assigns[value.id])
    ):
        return False
    return kernel.is_block(value)


def _helper_returns_scalars(ctx, value) -> bool:
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ctx.kernels):
        return False
    helper = ctx.kernels[value.func.id]
    returns = [r.value for r in ast.walk(helper.node) if isinstance(r, ast.Return) and r.value is not None]

    def reduced(expr) -> bool:
        if isinstance(expr, ast.Call):
            return helper.qualname(expr.func) in REDUCTIONS
        if isinstance(expr, ast.Name):
            values = helper.assigns.get(expr.id, [])
            return bool(values) and all(reduced(v) for v in values)
        return False

    return bool(returns) and all(
        all(reduced(e) for e in (r.elts if isinstance(r, ast.Tuple) else [r])) for r in returns
    )
