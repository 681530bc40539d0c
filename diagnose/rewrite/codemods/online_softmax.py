"""online-softmax: a running-max pass and a sum-of-exp pass over the same row become one online pass."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from diagnose import syntax
from diagnose.rewrite.edit import replace, statement, unique_name, with_comment
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import (
    loop_body,
    Kernel,
    assigned_names,
    code,
    dotted,
    has_effects,
    int_value,
    is_tl_call,
    kernels,
    names,
    positional,
    read_names,
    same,
    simple_assignment,
    walk,
)


@dataclass(frozen=True)
class OnlinePlan:
    kernel: Kernel
    loops: tuple[cst.For, cst.For]  # the max pass, the sum pass
    m: str  # the running max
    s: str  # the sum of exponentials
    r: str  # the row max, `R = tl.max(m, axis=0)`
    row_max: cst.SimpleStatementLine
    s_init: cst.SimpleStatementLine | None  # `s = tl.zeros(...)` when it sits between the passes
    before: tuple[cst.BaseStatement, ...]  # the other statements between the passes
    after: tuple[cst.BaseStatement, ...]  # those that read R: they move after the fused pass
    body: tuple[cst.BaseStatement, ...]  # the sum pass's statements
    accumulate: cst.SimpleStatementLine  # `s += tl.exp(Y - R)`
    value: cst.BaseExpression  # Y
    lib: str  # how the kernel spells triton.language (`tl`)


class OnlineSoftmax(Rewrite):
    """## What it changes
    A row kernel that walks a row twice over the same `range(...)`, `m = tl.maximum(m, x)` in the
    first loop, then after `R = tl.max(m, axis=0)` `s += tl.exp(x - R)` in the second, gets one loop
    that keeps the running max and rescales the running sum when the max grows (online softmax):
    `m_new = tl.maximum(m, x)`, `s = s * tl.exp(m - m_shift) + tl.exp(x - m_shift)`, `m = m_new`,
    where `m_shift` is `m_new` with lanes that have seen only `-inf` (masked) shifted by 0. After it,
    `R = tl.max(m, axis=0)` and `s = s * tl.exp(m - R)` (0 where `m` is `-inf`) bring every lane to
    the row max. The sum's
    init moves before the loop, statements after the passes (softmax's normalize pass) and the
    launch stay as they are.

    ## When it is valid
    Per lane, `sum_i exp(x_i - R) = exp(m - R) * sum_i exp(x_i - m)` with m the lane's max, and a
    lane that saw only `-inf` sums 0 either way. Required: the first loop ends with `m =
    tl.maximum(m, E)`, the second accumulates `s += tl.exp(Y - R)` (or `s = s + ...`) from `s =
    tl.zeros(...)`; every other statement of both loops binds a temporary once (`name = value`, no
    store, atomic or helper call, read only after it is bound); no `break`/`continue`/`return`/`else`,
    the loop variable not assigned. E and Y are the same value: equal once each loop's temporaries
    are inlined (the loop variables matched), reading nothing the loops or the statements between
    them bind. The second loop reads neither m nor R elsewhere; between the loops only `R = tl.max(m,
    axis=0)` (or `tl.max(m, 0)`), the sum's init and statements without effects that touch nothing
    the loops bind (those that read R move after the fused loop when nothing else reads what they
    bind). The kernel is not autotuned; `tl.exp2` sums are not handled.

    ## Why it is faster
    The row is read from HBM once for max and sum instead of twice: a cross-entropy or log-sum-exp
    kernel moves half the bytes, softmax two reads instead of three, at any row length (single-pass-row
    needs the row to fit one block).

    ## Safety
    Safe: the same sum with per-chunk rescaling (float reassociation and the rounding of the rescale
    factors). A row of only `-inf` sums to 0 (its log-sum-exp is `-inf`) where the two passes gave
    `exp(-inf - -inf)`, NaN.

    ## Answers
    TRI007 (multi-pass-row-reload) when the passes are a max and a sum of exponentials.

    ## References
    Milakov & Gimelshein 2018, "Online normalizer calculation for softmax" (arXiv:1805.02867);
    FlashAttention's running max and rescaled sum (Dao et al. 2022).
    """

    id = "online-softmax"
    title = "Fuse the row-max and sum-of-exp passes into one online-softmax pass"
    codes = ("TRI007",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            _plan,
            OnlinePlan,
            lambda p: f"max pass and sum pass over {code(p.loops[0].iter)}",
            "no kernel has a running-max pass and a sum pass over one range",
        )

    def transform(self, ctx: RewriteContext, plan: OnlinePlan) -> str:
        (first, second), m, s, tl = plan.loops, plan.m, plan.s, plan.lib
        taken = names(plan.kernel.node) | set(plan.kernel.params)
        m_new = unique_name(taken, f"{m}_new")
        m_shift = unique_name(taken | {m_new}, f"{m}_shift")
        x, bind = code(plan.value), []
        if not isinstance(plan.value, cst.Name):
            x = unique_name(taken | {m_new, m_shift}, "x")
            bind = [statement(f"{x} = {code(plan.value)}")]
        online = [
            *bind,
            statement(f"{m_new} = {tl}.maximum({m}, {x})"),
            with_comment(
                statement(f'{m_shift} = {tl}.where({m_new} == float("-inf"), 0.0, {m_new})'),
                "a lane that has seen only -inf (masked) keeps exp() finite: shift by 0 there",
            ),
            statement(f"{s} = {s} * {tl}.exp({m} - {m_shift}) + {tl}.exp({x} - {m_shift})"),
            statement(f"{m} = {m_new}"),
        ]
        at = plan.body.index(plan.accumulate)
        note = f"# max and sum in one pass (online softmax): the row is read once, {s} follows the running max"
        fused = second.with_changes(  # a new block: the passes' end-of-line comments describe passes that are gone
            body=cst.IndentedBlock(body=[*plan.body[:at], *online, *plan.body[at + 1 :]]),
            leading_lines=[*first.leading_lines, *_comments(second), cst.EmptyLine(comment=cst.Comment(note))],
        )
        # a lane that saw only -inf holds 0 (and so does every lane of an empty or all -inf row, where R is -inf)
        rescale = with_comment(
            statement(f'{s} = {tl}.where({m} == float("-inf"), 0.0, {s} * {tl}.exp({m} - {plan.r}))'),
            "rescale every lane to the row max",
        )
        before = [st.with_changes(leading_lines=_comments(st)) if st is plan.s_init else st for st in plan.before]
        stmts = list(plan.kernel.statements)
        i, j = stmts.index(first), stmts.index(second)
        body = [*stmts[:i], *before, fused, plan.row_max, rescale, *plan.after, *stmts[j + 1 :]]
        node = plan.kernel.node
        return replace(ctx.module, {node: node.with_changes(body=node.body.with_changes(body=body))}).code


def _plan(kernel: Kernel) -> OnlinePlan | str | None:
    stmts, reason = list(kernel.statements), None
    for i, first in enumerate(stmts):
        found = _running_max(first)
        later = [st for st in stmts[i + 1 :] if found and _is_loop(st) and same(st.iter, first.iter)]
        if later:
            plan = _pair(kernel, stmts, i, stmts.index(later[0]), *found)
            if isinstance(plan, OnlinePlan):
                return plan
            reason = plan
    return reason


def _pair(kernel: Kernel, stmts: list, i: int, j: int, m: str, e: cst.BaseExpression, tl: str) -> OnlinePlan | str:
    first, second = stmts[i], stmts[j]
    body1, body2, between = loop_body(first), loop_body(second), stmts[i + 1 : j]
    v1, v2 = first.target.value, second.target.value
    if kernel.autotuned:
        return "autotuned"
    for loop in (first, second):
        if loop.orelse is not None or any(
            isinstance(n, (cst.Break, cst.Continue, cst.Return)) for n in walk(loop.body)
        ):
            return "a pass has break/continue/return or an else branch"
        if loop.target.value in assigned_names(loop.body):
            return f"a pass assigns its loop variable {loop.target.value}"
    row_max = next((st for st in between if _is_row_max(st, m)), None)
    if row_max is None:
        return f"no `R = tl.max({m}, axis=0)` between the passes"
    r = simple_assignment(row_max)[0]
    sums = [(st, *acc) for st in body2 if (acc := _accumulation(st)) is not None]
    found = [(st, s, y) for st, s, term in sums if (y := _shifted(term, r)) is not None]
    if not found:
        exp2 = any(is_tl_call(term, "exp2") for _, _, term in sums)
        return (
            "the sum uses tl.exp2 (only tl.exp is handled)" if exp2 else f"no `s += tl.exp(x - {r})` in the second pass"
        )
    accumulate, s, y = found[0]
    rest2 = [st for st in body2 if st is not accumulate]
    if m in _over(names, body2):
        return f"the sum pass reads the running max {m}"
    if r in _over(names, rest2) | names(y):
        return f"the row max {r} is used elsewhere in the sum pass"
    if s in _over(names, rest2) | names(y) or {s, r} & _over(names, body1) or m in _over(names, body1[:-1]):
        return f"a pass uses {m}, {s} or {r} outside its update"
    defs1 = _temporaries(body1, body1[-1], {v1: ast.Name(v2, ast.Load())})
    defs2 = _temporaries(body2, accumulate, {})
    if isinstance(defs1, str) or isinstance(defs2, str):
        return defs1 if isinstance(defs1, str) else defs2
    value = _inline(y, defs2)
    if ast.dump(_inline(e, defs1)) != ast.dump(value):
        return "the two passes load different values (compared with their temporaries inlined)"
    bound1, bound2 = _over(assigned_names, body1) | {v1}, _over(assigned_names, body2) | {v2}
    reads = ({n.id for n in ast.walk(value) if isinstance(n, ast.Name)} - {v2}) | names(second.iter)
    changed = reads & (bound1 | bound2 | _over(assigned_names, between) | {m, s, r})
    carried = (_over(read_names, body2) - bound2) & bound1
    if changed or carried:
        return f"the sum pass reads {min(changed or carried)}, which the max pass or a statement between them binds"
    k = max((k for k in range(j) if s in assigned_names(stmts[k])), default=None)
    if k is None or simple_assignment(stmts[k])[0] != s or not is_tl_call(simple_assignment(stmts[k])[1], "zeros"):
        return f"the sum {s} does not start from `{s} = tl.zeros(...)` at the kernel's top level"
    init, touched = stmts[k] if k > i else None, bound1 | bound2 | {m, s}
    if any(s in names(st) for st in stmts[k + 1 : j]) or (init and names(simple_assignment(init)[1]) & (touched | {r})):
        return f"{s} is used between its init and the sum pass"
    before, after = [], []
    for st in between:
        if st is row_max:
            continue
        if st is not init and has_effects(st):
            return "a statement between the passes stores or calls something (it would move across the loads)"
        if st is not init and names(st) & touched:
            return f"a statement between the passes uses {min(names(st) & touched)}, which a pass binds"
        if r in assigned_names(st) or (r in names(st) and between.index(st) < between.index(row_max)):
            return f"{r} is bound again, or read before `{r} = tl.max(...)`, between the passes"
        (after if r in names(st) else before).append(st)
    stay = _over(names, before) | _over(names, body2) | names(second.iter)
    if _over(names, after) & _over(assigned_names, before) or _over(assigned_names, after) & stay:
        return f"the statements between the passes that read {r} cannot move after the fused pass"
    first_only = bound1 - bound2 - {m}
    if first_only & _over(names, stmts[j + 1 :]):
        return f"{min(first_only & _over(names, stmts[j + 1 :]))}, bound only by the max pass, is read after the passes"
    return OnlinePlan(
        kernel, (first, second), m, s, r, row_max, init, tuple(before), tuple(after), tuple(body2), accumulate, y, tl
    )


def _is_loop(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.For)
        and isinstance(stmt.target, cst.Name)
        and isinstance(stmt.iter, cst.Call)
        and dotted(stmt.iter.func) in ("range", "tl.range")
    )


def _running_max(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression, str] | None:
    """(m, E, `tl`) for a loop whose last statement is `m = tl.maximum(m, E)`."""
    m, value = simple_assignment(loop_body(stmt)[-1]) if _is_loop(stmt) else (None, None)
    if m is None or not is_tl_call(value, "maximum") or len(positional(value)) != 2 or len(value.args) != 2:
        return None
    for mine, other in ((value.args[0].value, value.args[1].value), (value.args[1].value, value.args[0].value)):
        if _is_name(mine, m) and m not in names(other):
            return m, other, code(value.func).rsplit(".", 1)[0]
    return None


def _is_row_max(stmt: cst.CSTNode, m: str) -> bool:
    """`R = tl.max(m, axis=0)` or `R = tl.max(m, 0)`."""
    _, value = simple_assignment(stmt)
    if not is_tl_call(value, "max") or len(value.args) != 2 or value.args[0].keyword is not None:
        return False
    axis = value.args[1]
    return (
        _is_name(value.args[0].value, m)
        and int_value(axis.value) == 0
        and (axis.keyword is None or axis.keyword.value == "axis")
    )


def _accumulation(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """(s, term) for `s += term` or `s = s + term`."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if (
        isinstance(small, cst.AugAssign)
        and isinstance(small.operator, cst.AddAssign)
        and isinstance(small.target, cst.Name)
    ):
        return small.target.value, small.value
    s, value = simple_assignment(stmt)
    if s and isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and _is_name(value.left, s):
        return s, value.right
    return None


def _shifted(term: cst.BaseExpression, r: str) -> cst.BaseExpression | None:
    """Y for `tl.exp(Y - r)`."""
    arg = term.args[0].value if is_tl_call(term, "exp") and len(positional(term)) == len(term.args) == 1 else None
    if isinstance(arg, cst.BinaryOperation) and isinstance(arg.operator, cst.Subtract) and _is_name(arg.right, r):
        return arg.left
    return None


def _temporaries(body: list, update: cst.CSTNode, defs: dict[str, ast.expr]) -> dict[str, ast.expr] | str:
    """Each temporary of a pass as an expression of names from outside it (the temporaries before it
    inlined), or why the statements other than `update` are not such temporaries."""
    defs, seen, bound = dict(defs), set(), _over(assigned_names, body)
    for stmt in body:
        early = read_names(stmt) & (bound - seen - (assigned_names(stmt) if stmt is update else set()))
        target, value = simple_assignment(stmt)
        if early:
            return f"a pass reads {min(early)} before binding it (a value carried across iterations)"
        if stmt is not update and has_effects(stmt):
            return "a pass stores or calls something with effects"
        if stmt is not update and (target is None or target in seen):
            return f"a pass has a statement that is not a temporary bound once: {code(stmt).strip()}"
        if stmt is not update:
            defs[target] = _inline(value, defs)
        seen |= assigned_names(stmt)
    return defs


class _Inline(ast.NodeTransformer):
    def __init__(self, defs: dict[str, ast.expr]):
        self.defs = defs

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.defs.get(node.id, node)


def _inline(expr: cst.BaseExpression, defs: dict[str, ast.expr]) -> ast.expr:
    return _Inline(defs).visit(syntax.parse(f"({code(expr)})", mode="eval").body)


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _comments(stmt: cst.CSTNode) -> list[cst.EmptyLine]:
    return [line for line in stmt.leading_lines if line.comment is not None]


def _over(function, stmts) -> set[str]:
    """The union of `function(statement)`: names, read_names or assigned_names of a list of statements."""
    return set().union(*(function(st) for st in stmts))
