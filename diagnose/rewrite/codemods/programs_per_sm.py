"""programs-per-sm: a grid sized by the SM count gets K programs per SM, K chosen by timing on the device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from diagnose.rewrite.edit import expression, operand, replace
from diagnose.rewrite.reach import functions, reached_sites
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, host_assignments, resolve_grid
from diagnose.rewrite.source import (
    Kernel,
    calls,
    code,
    dotted,
    int_value,
    kernels,
    read_names,
    simple_assignment,
    tl_name,
    walk,
)
from diagnose.task.harness import replay_targets

FACTOR = "programs_per_sm"
FACTORS = (2, 4, 8)
MAX_FACTOR = 32
# How the host asks for the SM count: torch's device properties, Triton's driver utilities.
ATTRIBUTE = "multi_processor_count"
KEY = "multiprocessor_count"
DEPTH = 4  # host assignments followed from the grid to the read


@dataclass(frozen=True)
class CountPlan:
    reads: tuple[cst.BaseExpression, ...]  # the expressions that give the SM count, scaled in place
    shown: str  # the first of them, as written
    factor: int  # the scaling already there (`E * 4`: 4), else 1
    helpers: frozenset[str]  # module functions that return the count


class ProgramsPerSm(Rewrite):
    """## What it changes
    A launch whose grid is sized by the device's SM count (`sm_count = torch.cuda.get_device_properties(
    X.device).multi_processor_count`, `grid = (sm_count,)`; Triton's
    `driver.active.utils.get_device_properties(d)["multiprocessor_count"]`; a module helper that returns
    either) gets `K` programs per SM: the host expression that reads the count becomes `<read> * K`
    where it is written, so everything the host derives from it (the grid, `rows_per_program =
    ceil(n_rows / sm_count)`, a per-program partial buffer `torch.empty((sm_count, n_cols))` and its
    final `sum(0)`, a `NUM_SMS` constexpr the kernel strides by) changes together. `K` is chosen by
    timing only: the current count and 2, 4 and 8 times it are timed side by side on the device; with
    no device nothing changes, and the rewrite says so.

    ## When it is valid
    The kernel must not depend on the programs all being resident at once: a kernel that spins on
    other programs (`tl.atomic_cas`, or a `while` loop that reads an atomic or a volatile load) could
    wait forever for a program that cannot start, and is declined. Otherwise a grid-stride kernel
    visits every row or tile once whatever the grid, and the host's buffers sized by the count grow
    with it. The read is followed from the grid of a launch the task's call reaches (through
    assignments of the launching function and of the module, `DEPTH` deep); device branches that ask
    another count (XPU, NPU) are left as they are. On CUDA and HIP only: on Ascend a grid over the
    core count runs in rounds.

    ## Why it is faster
    One program per SM that loops over rows (Liger-Kernel's norm backward passes: a row of 4096 values
    per iteration, 62 iterations at 8192 rows on 132 SMs) keeps one row's loads in flight per SM: the
    SM has room for several such programs (registers and shared memory allow 2-8), and the loop's loads
    wait on the previous iteration's arithmetic. More programs per SM put more independent rows in
    flight and shorten each program's serial chain; the cost is a larger partial buffer to reduce
    (K x SMs rows instead of SMs rows), which is why only timing decides K.

    ## Safety
    Safe for the values kernels compute per row; a per-program partial reduction (dW summed over
    programs) is summed in a different grouping, within float rounding.

    ## Answers
    PRF004 (fewer programs than the device holds: waves per SM below one), PRF003 (latency-bound: too
    little in flight).

    ## References
    Liger-Kernel's `rms_norm_backward` / `layer_norm_backward` (the sm_count grid and `_dW` partial
    sums); the Triton tutorials' fused softmax (programs = SMs x occupancy) and persistent matmul
    (`NUM_SMS`); CUDA's occupancy guide (resident blocks per SM).
    """

    id = "programs-per-sm"
    title = "Give a grid sized by the SM count more programs per SM, keep the fastest"
    codes = ("PRF003", "PRF004")
    backends = ("cuda", "hip")
    tunable = True
    estimated = False
    timed_configs = 5

    def precondition(self, ctx: RewriteContext) -> Precondition:
        module, targets = ctx.module, replay_targets(ctx.source)
        known = kernels(module)
        helpers = _count_helpers(module)
        return Precondition.first_site(
            reached_sites(module, targets),
            lambda site: _plan(module, known[site.kernel], site, helpers),
            CountPlan,
            _describe,
            targets,
        )

    def search_space(self, ctx: RewriteContext, plan: CountPlan) -> list[dict[str, Any]]:
        """The current count first, then 2, 4 and 8 times it, then half of a scaling written before."""
        now = plan.factor
        out = [{FACTOR: now}] + [{FACTOR: now * k} for k in FACTORS if now * k <= MAX_FACTOR]
        return out + ([{FACTOR: now // 2}] if now >= 2 else [])

    def transform(self, ctx: RewriteContext, plan: CountPlan) -> str:
        factor = int(ctx.param(FACTOR, plan.factor))
        if factor == plan.factor:
            return ctx.source
        mapping = {read: expression(scaled(_base(read, set(plan.helpers))[0], factor)) for read in plan.reads}
        return replace(ctx.module, mapping).code


def _describe(plan: CountPlan) -> str:
    return f"grid sized by {plan.shown}" + (f" x{plan.factor}" if plan.factor != 1 else "")


def scaled(base: cst.BaseExpression, factor: int) -> str:
    """`base * factor` (`base` parenthesised unless it binds as one operand), or `base` for 1."""
    return code(base) if factor == 1 else f"{operand(base)} * {factor}"


def _base(read: cst.BaseExpression, helpers: set[str]) -> tuple[cst.BaseExpression, int]:
    """(E, K) of a read this rewrite scaled before (`E * K`, K an integer literal); else (read, 1)."""
    if isinstance(read, cst.BinaryOperation) and isinstance(read.operator, cst.Multiply):
        factor = int_value(read.right)
        base = read.left.with_changes(lpar=(), rpar=()) if getattr(read.left, "lpar", None) else read.left
        if factor and factor > 0 and _is_read(base, helpers):
            return base, factor
    return read, 1


def _is_read(node: cst.CSTNode, helpers: set[str]) -> bool:
    """Whether `node` itself asks the device for its SM count: `<props>.multi_processor_count`,
    `<props>["multiprocessor_count"]`, or a call of a module helper that returns one of those."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == ATTRIBUTE
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        key = node.slice[0].slice.value
        return isinstance(key, cst.SimpleString) and key.evaluated_value == KEY
    return isinstance(node, cst.Call) and dotted(node.func) in helpers


def _units(node: cst.CSTNode, helpers: set[str]) -> list[cst.BaseExpression]:
    """The reads of the SM count under `node`, each with the scaling this rewrite gave it (`E * K`)."""
    if isinstance(node, cst.BaseExpression) and (_base(node, helpers)[1] != 1 or _is_read(node, helpers)):
        return [node]
    return [u for child in node.children for u in _units(child, helpers)]


def _count_helpers(module: cst.Module) -> set[str]:
    """Module functions that return the SM count (`def get_num_sms(): return ...multi_processor_count`),
    helpers of helpers included."""
    found: set[str] = set()
    defs = {name: node for name, node in functions(module).items() if "." not in name}
    while True:
        more = {
            name
            for name, node in defs.items()
            if name not in found
            and any(
                r.value is not None and _units(r.value, found) for r in walk(node.body) if isinstance(r, cst.Return)
            )
        }
        if not more:
            return found
        found |= more


def _plan(module: cst.Module, kernel: Kernel, site: LaunchSite, helpers: set[str]) -> CountPlan | str:
    """The plan for one launch site, or why not. The grid's own reads, else those its names reach
    through the host's and the module's assignments; then every read of the launching function, so
    that the host sees one SM count however often it asks (a grid `(num_sms(d),)` beside
    `rows = cdiv(n, num_sms(d))` must not scale one and not the other)."""
    spin = _spins(kernel)
    if spin:
        return spin
    grid, _ = resolve_grid(site)
    body = grid.body if isinstance(grid, cst.Lambda) else grid
    reads = _units(body, helpers)
    pending, seen = [(n, 0) for n in sorted(read_names(body))], set()
    while pending and not reads:
        name, depth = pending.pop(0)
        if name in seen or depth >= DEPTH:
            continue
        seen.add(name)
        bound = [simple_assignment(s)[1] for s in host_assignments(site.host, name)] or _module_values(module, name)
        for value in (v for v in bound if v is not None):
            found = _units(value, helpers)
            reads += found
            if not found:
                pending += [(n, depth + 1) for n in sorted(read_names(value))]
    if not reads:
        return "its grid is not sized by the SM count"
    base, factor = _base(reads[0], helpers)
    every = reads + [u for u in _units(site.host.body, helpers) if not any(u is r for r in reads)]
    return CountPlan(tuple(every), code(base), factor, frozenset(helpers))


def _module_values(module: cst.Module, name: str) -> list[cst.BaseExpression | None]:
    """Values a module-level `name = ...` binds (the tutorials' `NUM_SM = properties["multiprocessor_count"]`)."""
    out = []
    for stmt in module.body:
        target, value = simple_assignment(stmt)
        if target == name:
            out.append(value)
    return out


def _spins(kernel: Kernel) -> str | None:
    """Why the kernel needs every program resident (it waits on others), or None."""
    if calls(kernel.node, "atomic_cas"):
        return "it waits on other programs (tl.atomic_cas): more programs than fit at once could deadlock"
    for loop in (n for n in walk(kernel.node.body) if isinstance(n, cst.While)):
        atomic = any((tl_name(c.func) or "").startswith("atomic_") for c in walk(loop) if isinstance(c, cst.Call))
        if atomic or "volatile" in code(loop):
            return (
                "it spins in a while loop on an atomic or volatile load: more programs than fit at once could deadlock"
            )
    return None
