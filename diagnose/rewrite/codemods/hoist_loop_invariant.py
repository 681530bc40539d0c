"""hoist-loop-invariant: loads and address arithmetic that do not change between iterations move out."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from diagnose import syntax
from diagnose.rewrite.edit import replace, set_keyword
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import (
    Kernel,
    assigned_names,
    calls,
    code,
    dotted,
    has_effects,
    int_value,
    keyword,
    kernels,
    names,
    positional,
    read_names,
    simple_assignment,
    walk,
)

RANGES = ("range", "tl.range", "tl.static_range", "triton.language.range")


@dataclass(frozen=True)
class HoistPlan:
    loops: tuple[tuple[cst.For, tuple[cst.SimpleStatementLine, ...]], ...]
    kernels: tuple[str, ...]


class HoistLoopInvariant(Rewrite):
    """## What it changes
    A statement `name = expr` at the top level of a `for` loop whose value cannot change between
    iterations moves right before the loop: address arithmetic (`p = w_ptr + cols`) and loads from
    such addresses (`w = tl.load(w_ptr + cols)`). Repeated until nothing more moves, so a load
    whose address was hoisted follows it. A hoisted load gets the loop's trip condition as its mask
    (`mask=start < stop`, and-ed with its own), so that a loop that runs zero times still touches no
    memory.

    ## When it is valid
    `expr` reads no name the loop assigns (its variable included) and has no effects; `name` is
    bound only by this statement in the whole kernel and is not read in the loop before it (not
    loop-carried). A load is hoisted only from a loop with no store or atomic (no aliasing write
    can change what it reads) and a `range` whose step is positive (a literal, or a constexpr that
    sizes a `tl.arange`).

    ## Why it is faster
    The load runs once instead of once per iteration: fewer memory transactions and no re-issued
    address math in the hot loop. Triton keeps loads where they are written (and on Ascend the
    compiler keeps source order), so the source has to say it.

    ## Safety
    Safe: the same values; a zero-trip loop now evaluates pure arithmetic once and no load.

    ## Answers
    ASC015 (loop-invariant-load).

    ## References
    Krusty84/triton-ascend-agent-dev-kit, skill schedule-loads (third party: the compiler keeps source
    order, so independent loads are hoisted by hand).
    """

    id = "hoist-loop-invariant"
    title = "Hoist loop-invariant loads and address arithmetic out of the loop"
    codes = ("ASC015",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        loops, where = [], []
        for kernel in kernels(ctx.module).values():
            for loop in (n for n in walk(kernel.node.body) if isinstance(n, cst.For)):
                moved = invariant_statements(kernel, loop)
                if moved:
                    loops.append((loop, tuple(moved)))
                    where.append(kernel.name)
        if not loops:
            return Precondition.no("no loop holds a statement whose value is the same in every iteration")
        count = sum(len(m) for _, m in loops)
        return Precondition.yes(
            f"{count} loop-invariant statement(s) in {len(loops)} loop(s)",
            tuple(dict.fromkeys(where)),
            HoistPlan(tuple(loops), tuple(where)),
        )

    def transform(self, ctx: RewriteContext, plan: HoistPlan) -> str:
        mapping = {}
        for loop, moved in plan.loops:
            guard = _trip_condition(loop)
            hoisted = []
            for i, stmt in enumerate(moved):
                stmt = _guard_loads(stmt, guard)
                if i == 0:
                    stmt = stmt.with_changes(
                        leading_lines=[
                            *loop.leading_lines,
                            cst.EmptyLine(
                                comment=cst.Comment("# hoisted out of the loop below: the same in every iteration")
                            ),
                        ]
                    )
                hoisted.append(stmt.with_changes(leading_lines=stmt.leading_lines if i == 0 else []))
            body = [s for s in loop.body.body if s not in moved]
            if not body:
                body = [cst.SimpleStatementLine(body=[cst.Pass()])]
            new_loop = loop.with_changes(body=loop.body.with_changes(body=body), leading_lines=[])
            mapping[loop] = cst.FlattenSentinel([*hoisted, new_loop])
        return replace(ctx.module, mapping).code


def invariant_statements(kernel: Kernel, loop: cst.For) -> list[cst.SimpleStatementLine]:
    """Statements of `loop`'s top level that can move before it, in order."""
    if not isinstance(loop.body, cst.IndentedBlock) or not _is_range(loop):
        return []
    tree = syntax.parse(code(kernel.node).strip())
    stores = _store_counts(tree)
    loop_writes = has_effects(loop.body)
    positive_step = _positive_step(kernel, loop)
    moved: list[cst.SimpleStatementLine] = []
    changed = True
    while changed:
        changed = False
        remaining = [s for s in loop.body.body if s not in moved]
        assigned = names(loop.target) | set().union(*(assigned_names(s) for s in remaining))
        for i, stmt in enumerate(remaining):
            name, value = simple_assignment(stmt)
            if name is None or stmt in moved or has_effects(stmt):
                continue
            loads = calls(value, "load")
            if loads and (loop_writes or not positive_step):
                continue
            if stores.get(name, 0) != 1 or name in kernel.params or name in read_names(value):
                continue
            if any(name in read_names(s) for s in remaining[:i]):
                continue
            if read_names(value) & (assigned - {name}):
                continue
            moved.append(stmt)
            changed = True
            break
    return moved


def _store_counts(tree: ast.AST) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] = out.get(n.id, 0) + 1
    return out


def _is_range(loop: cst.For) -> bool:
    return isinstance(loop.iter, cst.Call) and dotted(loop.iter.func) in RANGES and 1 <= len(positional(loop.iter)) <= 3


def _bounds(loop: cst.For) -> tuple[str, str, cst.BaseExpression | None]:
    args = [a.value for a in positional(loop.iter)]
    if len(args) == 1:
        return "0", code(args[0]), None
    return code(args[0]), code(args[1]), args[2] if len(args) == 3 else None


def _positive_step(kernel: Kernel, loop: cst.For) -> bool:
    _, _, step = _bounds(loop)
    if step is None:
        return True
    value = int_value(step)
    if value is not None:
        return value > 0
    name = dotted(step)
    sizes = {dotted(c.args[1].value) for c in calls(kernel.node.body, "arange") if len(c.args) == 2}
    return name in kernel.constexprs and name in sizes


def _trip_condition(loop: cst.For) -> str:
    start, stop, _ = _bounds(loop)
    return f"{start} < {stop}"


def _guard_loads(stmt: cst.SimpleStatementLine, guard: str) -> cst.SimpleStatementLine:
    """Every `tl.load` in `stmt` masked by the loop's trip condition too."""
    mapping = {}
    for load in calls(stmt, "load"):
        mask = keyword(load, "mask") or (positional(load)[1] if len(positional(load)) > 1 else None)
        if mask is None:
            mapping[load] = set_keyword(load, "mask", cst.parse_expression(f"({guard})"))
        else:
            mapping[mask.value] = cst.parse_expression(f"({guard}) & ({code(mask.value)})")
    return replace(cst.Module(body=[stmt]), mapping).body[0]
