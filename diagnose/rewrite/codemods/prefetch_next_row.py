"""prefetch-next-row: a loop over rows loads the next row while it computes on this one."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.records import Evidence
from diagnose.rewrite.edit import expression, is_operand, operand, replace, set_keyword, statement, unique_name
from diagnose.rewrite.reach import reached_kernels
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import (
    Kernel,
    assigned_names,
    code,
    dotted,
    int_value,
    keyword,
    kernels,
    names,
    positional,
    read_names,
    simple_assignment,
    tl_name,
    walk,
)
from diagnose.task.harness import replay_targets

RANGES = ("range", "tl.range", "triton.language.range")
DOTS = ("dot", "dot_scaled")


@dataclass(frozen=True)
class RowLoad:
    """One load at the top of the row loop's body: `target = tl.load(...)` (or `tl.load(...).to(...)`)."""

    statement: cst.SimpleStatementLine
    target: str
    load: cst.Call  # the tl.load call itself
    value: cst.BaseExpression  # the whole assigned value (the load, or a chain on it)
    moved: cst.Call | None = None  # the load with the body's address helpers inlined


@dataclass(frozen=True)
class PrefetchPlan:
    kernel: str
    loop: cst.For
    var: str
    start: cst.BaseExpression
    end: cst.BaseExpression
    step: cst.BaseExpression | None
    bumps: tuple[tuple[str, cst.BaseExpression], ...]  # pointers advanced each iteration, by how much
    loads: tuple[RowLoad, ...]
    helpers: tuple[tuple[str, cst.SimpleStatementLine], ...] = ()  # address helpers the loads inlined


class PrefetchNextRow(Rewrite):
    """## What it changes
    In a kernel whose program loops over rows (`for row in range(row_start, row_end):`, a grid stride
    `range(pid, n_rows, tl.num_programs(0))`, or pointers bumped at the end of each iteration,
    `X_ptr += X_stride`), the loads at the top of the loop body that depend only on the row move one
    iteration ahead: before the loop the first row's loads are issued into `x_next`, and each
    iteration starts with `x = x_next` and issues the next row's loads (masked off past the last row)
    before computing on this one. Nothing else changes.

    ## When it is valid
    Each load's address, mask and `other` read only the loop variable, pointers the loop bumps by a
    loop-invariant stride after the load, and names the loop body does not assign; the loaded name is
    assigned once in the body and not read before its load; the loop has a positive step (a literal
    or an expression such as `tl.num_programs(0)`); the loop has no `tl.dot` (the pipeliner gives
    those loads shared-memory stages itself, which register prefetching would undo). At least one of
    the loads is a block (its address or mask involves a `tl.arange`): prefetching scalars alone hides
    nothing. The next row is loaded before this row's stores, so a store of this iteration must not
    write what the next iteration reads: rows at distinct addresses (a row stride at least the row's
    extent), as row-wise kernels are; in-place kernels that write row r where they read row r are
    fine. The harness verifies the rewritten kernel against the original on fresh inputs.

    ## Why it is faster
    Triton's software pipeliner gives `cp.async` stages to loads that feed `tl.dot`; a row loop's
    plain loads stay synchronous (Triton 3.6, sm_90, `num_stages` 1-4 and `tl.range(num_stages=...)`
    alike: no async copy in the TTGIR), so each iteration waits a full memory latency for its row,
    then reduces it (a cross-warp `tl.sum` with barriers), then stores it: with one program per SM,
    one row in flight per SM. Loading the next row first keeps that latency under this row's
    arithmetic. Liger-Kernel's layer norm backward on the H200 ([8192, 4096] bf16, 132 programs):
    120 us -> 92 us (1.30x); at [4096, 4096] no gain (0.95x): timing decides.

    ## Safety
    Safe: the same loads and arithmetic; one more row of registers is live (check spills on very wide
    rows).

    ## Answers
    PRF003 (latency-bound), PRF004 (few programs, each looping over rows), and the IR fact
    SoftwarePipelining where a loop's loads were not pipelined.

    ## References
    Software prefetching / register double-buffering (CUDA C++ Best Practices, "asynchronous copy";
    the classic `a_next = load(k + 1)` pattern of hand-written CUDA GEMMs).
    """

    id = "prefetch-next-row"
    title = "Load the next row while computing this one"
    codes = ("PRF003", "PRF004")
    evidence = ("SoftwarePipelining",)

    def answers(self, evidence: Evidence) -> bool:
        return evidence.name == "SoftwarePipelining" and evidence.arg("pipelined") is False

    def precondition(self, ctx: RewriteContext) -> Precondition:
        known = kernels(ctx.module)
        order = reached_kernels(ctx.module, replay_targets(ctx.source))
        return Precondition.first_kernel(
            [known[k] for k in (known if order is None else order)],
            _plan,
            PrefetchPlan,
            _describe,
            "no kernel loops over rows",
        )

    def transform(self, ctx: RewriteContext, plan: PrefetchPlan) -> str:
        taken = names(ctx.module)
        next_of = {}
        for load in plan.loads:
            next_of[load.target] = unique_name(taken | set(next_of.values()), f"{load.target}_next")
        var_next = unique_name(taken | set(next_of.values()), f"{plan.var}_next")
        bumps = dict(plan.bumps)
        first = f"{operand(plan.start)} < {operand(plan.end)}"
        prologue = [
            statement(f"{next_of[load.target]} = {_load(load.moved, {plan.var: code(plan.start)}, {}, first)}")
            for load in plan.loads
        ]
        head = [
            statement(f"{load.target} = {code(replace(load.value, {load.load: cst.Name(next_of[load.target])}))}")
            for load in plan.loads
        ]
        head.append(statement(f"{var_next} = {plan.var} + {operand(plan.step) if plan.step is not None else '1'}"))
        inside = f"{var_next} < {operand(plan.end)}"
        head += [
            statement(f"{next_of[load.target]} = {_load(load.moved, {plan.var: var_next}, bumps, inside)}")
            for load in plan.loads
        ]
        moved = {id(load.statement) for load in plan.loads}
        kernel = kernels(ctx.module)[plan.kernel]
        body = _without_unused_helpers(head + [s for s in plan.loop.body.body if id(s) not in moved], plan, kernel)
        loop = plan.loop.with_changes(body=plan.loop.body.with_changes(body=body))
        return replace(ctx.module, {plan.loop: cst.FlattenSentinel([*prologue, loop])}).code


def _describe(plan: PrefetchPlan) -> str:
    moved = ", ".join(load.target for load in plan.loads)
    return f"loads {moved} one row ahead in `for {plan.var} in range(...)`"


def _plan(kernel: Kernel) -> PrefetchPlan | str:
    """The plan for the kernel's first top-level row loop with block loads to move ahead, or why not."""
    loops = [s for s in kernel.statements if isinstance(s, cst.For)]
    if not loops:
        return "no loop at the kernel's top level"
    blocks = _arange_names(kernel)
    why = "its loops load no row"
    for loop in loops:
        found = _loop_plan(kernel, loop, blocks)
        if isinstance(found, PrefetchPlan):
            return found
        why = found
    return why


def _loop_plan(kernel: Kernel, loop: cst.For, blocks: set[str]) -> PrefetchPlan | str:
    if not isinstance(loop.target, cst.Name) or not isinstance(loop.iter, cst.Call) or loop.orelse is not None:
        return "the loop is not `for row in range(...)`"
    if dotted(loop.iter.func) == "tl.static_range":
        return "the loop is a tl.static_range (unrolled: its iterations' loads can already be issued together)"
    if dotted(loop.iter.func) not in RANGES:
        return "the loop is not over range(...)"
    if not isinstance(loop.body, cst.IndentedBlock):
        return "the loop body is on one line"
    args = [a.value for a in positional(loop.iter)]
    if not 1 <= len(args) <= 3 or len(args) != len(loop.iter.args):
        return "the loop's range has keywords (num_stages, ...)"
    start, end = (expression("0"), args[0]) if len(args) == 1 else (args[0], args[1])
    step = args[2] if len(args) == 3 else None
    if step is not None and (int_value(step) or 1) <= 0:
        return "the loop's step is not positive"
    var = loop.target.value
    body = list(loop.body.body)
    if any(isinstance(n, (cst.Break, cst.Continue, cst.Return)) for n in walk(loop)):
        return "the loop body breaks, continues or returns"
    if any(tl_name(c.func) in DOTS for c in walk(loop) if isinstance(c, cst.Call)):
        return "the loop feeds tl.dot: Triton's pipeliner stages those loads itself (cp.async, TMA)"
    assigned_at = [assigned_names(s) for s in body]
    assigned = set().union(*assigned_at) if assigned_at else set()
    if var in assigned:
        return "the loop variable is reassigned in the body"
    if (read_names(end) | (read_names(step) if step is not None else set())) & assigned:
        return "the loop's end or step reads a name the body assigns (range read them once)"
    bumps, bumped_at = {}, {}
    for i, s in enumerate(body):
        bump = _bump(s)
        if bump and bump[0] not in bumps and not (read_names(bump[1]) & assigned):
            bumps[bump[0]], bumped_at[bump[0]] = bump[1], i
    for name in list(bumps):
        if sum(name in a for a in assigned_at) != 1:  # bumped and assigned some other way too
            del bumps[name]
    helpers: dict[str, cst.BaseExpression] = {}  # `row_ptr = X + row * stride`: inlined into the loads
    helper_lines: dict[str, cst.SimpleStatementLine] = {}
    loads = []
    for i, s in enumerate(body):
        target, value = simple_assignment(s)
        found = _row_load(s)
        if found is None:
            if target and sum(target in a for a in assigned_at) == 1 and "load" not in code(value):
                inlined = _inline(value, helpers)
                if not (read_names(inlined) - {var} - set(bumps)) & assigned:
                    helpers[target] = inlined
                    helper_lines[target] = s
            continue
        load = _inline(found.load, helpers)
        reads = read_names(load)
        if (reads - {var} - set(bumps)) & assigned:
            continue  # depends on something the body computes
        if any(bumped_at[p] < i for p in reads & set(bumps)):
            continue  # the pointer moved before this load: its address is the next row's already
        if found.target in set().union(*assigned_at[:i]) or any(found.target in read_names(b) for b in body[:i]):
            continue  # the name carries a value into this iteration before the load
        if found.target == var or found.target in bumps:
            continue
        loads.append(RowLoad(found.statement, found.target, found.load, found.value, load))
    if not loads:
        return "the loop's loads depend on values computed in the loop"
    if not any(read_names(load.moved) & blocks or "arange" in code(load.moved) for load in loads):
        return "the loop's movable loads are scalars (nothing to hide behind)"
    if not any(read_names(load.moved) & ({var} | set(bumps)) for load in loads):
        return "the loop's loads do not move with the row"
    return PrefetchPlan(
        kernel.name, loop, var, start, end, step, tuple(bumps.items()), tuple(loads), tuple(helper_lines.items())
    )


def _without_unused_helpers(
    body: list[cst.BaseStatement], plan: PrefetchPlan, kernel: Kernel
) -> list[cst.BaseStatement]:
    """The loop body less the address helpers only the moved loads read (`row_x = X + row * stride`
    once `x` is loaded ahead from the inlined address), their comments kept on the next statement."""
    after = kernel.statements[kernel.statements.index(plan.loop) + 1 :]
    out = list(body)
    for name, line in reversed(plan.helpers):
        others = [s for s in out if s is not line] + list(after)
        if line in out and not any(name in read_names(s) for s in others):
            at = out.index(line)
            out.pop(at)
            if at < len(out) and line.leading_lines:
                out[at] = out[at].with_changes(leading_lines=(*line.leading_lines, *out[at].leading_lines))
    return out


def _inline(node: cst.BaseExpression, helpers: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """`node` with the loop body's address helpers replaced by their (already inlined) values."""
    used = read_names(node) & set(helpers)
    if not used:
        return node
    return node.visit(_Substitute({n: helpers[n] for n in used}))


def _arange_names(kernel: Kernel) -> set[str]:
    """Names the kernel binds (outside loops) to blocks: `cols = tl.arange(...)`, `mask = cols < n`."""
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for s in kernel.statements:
            target, value = simple_assignment(s)
            if target and target not in out and ("arange" in code(value) or read_names(value) & out):
                out.add(target)
                changed = True
    return out


def _bump(s: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """(P, E) for a statement line `P += E`."""
    if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.AugAssign):
        aug = s.body[0]
        if isinstance(aug.operator, cst.AddAssign) and isinstance(aug.target, cst.Name):
            return aug.target.value, aug.value
    return None


def _row_load(s: cst.BaseStatement) -> RowLoad | None:
    target, value = simple_assignment(s)
    if target is None:
        return None
    inner = value
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and tl_name(inner.func) is None:
        inner = inner.func.value  # `tl.load(...).to(tl.float32)`: the load under a method chain
    if not (isinstance(inner, cst.Call) and tl_name(inner.func) == "load" and positional(inner)):
        return None
    if any(a.star for a in inner.args) or keyword(inner, "boundary_check") is not None:
        return None  # block pointers: their offsets, not their masks, say what is in bounds
    return RowLoad(s, target, inner, value)


def _load(load: cst.Call, renamed: dict[str, str], bumps: dict[str, cst.BaseExpression], valid: str) -> str:
    """The load's text for another row: the loop variable renamed, bumped pointers advanced by one
    step, and the row's validity `and`-ed into its mask."""
    subs = dict(renamed)
    subs.update({p: f"{p} + {operand(e)}" for p, e in bumps.items()})
    moved = load.visit(_Substitute({n: expression(t) for n, t in subs.items()}))
    address = moved.args[0].value  # an inlined helper that is the whole address needs no parentheses
    moved = moved.with_deep_changes(moved.args[0], value=address.with_changes(lpar=[], rpar=[]))
    given = positional(moved)
    mask = keyword(moved, "mask") or (given[1] if len(given) > 1 else None)  # `tl.load(p, mask, other)`
    if mask is None:
        return code(set_keyword(moved, "mask", expression(valid)))
    return code(moved.with_deep_changes(mask, value=expression(f"{operand(mask.value)} & ({valid})")))


class _Substitute(cst.CSTTransformer):
    """Names replaced by expressions, except where a name is not a variable (an attribute, a keyword)."""

    def __init__(self, subs: dict[str, cst.BaseExpression]):
        super().__init__()
        self.subs = subs

    def leave_Name(self, original, updated):
        new = self.subs.get(original.value)
        if new is None:
            return updated
        if is_operand(new):
            return new
        return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    def leave_Attribute(self, original, updated):
        value = updated.value
        if isinstance(value, (cst.Integer, cst.Float)) and not value.lpar:
            # the loop variable replaced by its start: `i_t.to(tl.int64)` -> `(0).to(...)`, `0.to` is no Python
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return updated.with_changes(value=value, attr=original.attr)

    def leave_BinaryOperation(self, original, updated):
        # `row_ptr + cols` with `row_ptr = X + row * stride`: `X + row * stride + cols`, no parentheses
        # (a sum or product on the left of a sum reads the same without them).
        left = updated.left
        if (
            isinstance(original.left, cst.Name)
            and original.left.value in self.subs
            and isinstance(original.operator, (cst.Add, cst.Subtract))
            and isinstance(left, cst.BinaryOperation)
            and isinstance(left.operator, (cst.Add, cst.Subtract, cst.Multiply))
        ):
            return updated.with_changes(left=left.with_changes(lpar=[], rpar=[]))
        return updated

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)
