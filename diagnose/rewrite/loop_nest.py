"""Loop nests in kernels: `for i in range(a, b): for j in range(c, d): ...` read as levels, and a
rectangular nest walked by one flat index."""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import unique_name
from diagnose.rewrite.source import code, int_value

DEPTH = 3  # loops nested deeper than this (a 3-D pooling window) are left alone


@dataclass(frozen=True)
class Level:
    """One loop of the nest: `for index in range(start, stop)`."""

    index: str
    start: str
    stop: str


def loop_range(expr: cst.BaseExpression) -> tuple[str, str] | None:
    """(start, stop) of `range(stop)`, `range(start, stop)`, `range(start, stop, 1)` (also `tl.range`)."""
    if not (isinstance(expr, cst.Call) and code(expr.func) in ("range", "tl.range")):
        return None
    args = [a for a in expr.args if a.keyword is None and not a.star]
    if len(args) != len(expr.args) or not 1 <= len(args) <= 3:
        return None
    if len(args) == 3 and int_value(args[2].value) != 1:
        return None
    if len(args) == 1:
        return "0", code(args[0].value)
    return code(args[0].value), code(args[1].value)


def nest(loop: cst.For) -> tuple[list[Level], list[cst.BaseStatement], list[cst.BaseStatement]] | str:
    """(levels, prelude, body) of `loop` and the loops nested as its last statement, or why not a nest."""
    levels: list[Level] = []
    prelude: list[cst.BaseStatement] = []
    current = loop
    while True:
        bounds = loop_range(current.iter)
        if bounds is None or not isinstance(current.target, cst.Name):
            where = code(current.target)
            return f"the loop over {where} is not over range(stop) or range(start, stop) with step 1"
        levels.append(Level(current.target.value, *bounds))
        lines = list(current.body.body)
        if lines and isinstance(lines[-1], cst.For) and len(levels) < DEPTH:
            prelude.extend(lines[:-1])
            current = lines[-1]
            continue
        return levels, prelude, lines


def flattened(levels: tuple[Level, ...], taken: set[str], flat: str) -> tuple[list[str], list[str], str]:
    """A rectangular nest as one index `flat` over `count` iterations: (bindings before the loop,
    bindings of each level's index from `flat` inside it, count). Literal spans are folded."""
    spans = []
    bindings = []
    for level in levels:
        begin, end = int_value(cst.parse_expression(level.start)), int_value(cst.parse_expression(level.stop))
        if begin is not None and end is not None:
            spans.append(str(max(0, end - begin)))
        elif level is levels[0]:
            spans.append(level.stop if begin == 0 else f"({level.stop} - {level.start})")
        elif begin == 0 and level.stop.isidentifier():
            spans.append(level.stop)  # `range(kernel_h)`: the span has a name already
        else:
            name = unique_name(taken, f"{level.index}_span")
            taken = taken | {name}
            bindings.append(f"{name} = {level.stop}" if begin == 0 else f"{name} = {level.stop} - {level.start}")
            spans.append(name)
    if all(span.isdigit() for span in spans):
        count = str(math.prod(int(span) for span in spans))
    else:
        count = unique_name(taken, f"{flat}_count")
        bindings.append(f"{count} = {' * '.join(spans)}")
    indices = []
    for i, level in enumerate(levels):
        inner = " * ".join(spans[i + 1 :])
        value = f"{flat} // ({inner})" if " * " in inner else (f"{flat} // {inner}" if inner else flat)
        if i > 0:
            value = f"{value} % {spans[i]}" if not inner else f"({value}) % {spans[i]}"
        start = "" if level.start == "0" else f"{level.start} + "
        indices.append(f"{level.index} = {start}{value}")
    return bindings, indices, count


# ---------------------------------------------------------------- guards as lane masks

OPERATORS = {
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
}
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def skip_guard(line: cst.CSTNode) -> cst.BaseExpression | None:
    """`C` of `if C: continue` (no else): the rest of the iteration runs where `C` is false."""
    if (
        isinstance(line, cst.If)
        and line.orelse is None
        and isinstance(line.body, cst.IndentedBlock)
        and len(line.body.body) == 1
        and isinstance(line.body.body[0], cst.SimpleStatementLine)
        and len(line.body.body[0].body) == 1
        and isinstance(line.body.body[0].body[0], cst.Continue)
    ):
        return line.test
    return None


def lane_terms(expr: cst.BaseExpression, negate: bool = False) -> list[str] | None:
    """A Python condition on scalars as the terms of Triton's elementwise conjunction (`0 <= h < H and
    w < W` as `["(0 <= h)", "(h < H)", "(w < W)"]`; `or` as one parenthesised `|` term; `not` inverts
    the comparisons), negated on request; None when it is not made of comparisons and flags."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return lane_terms(expr.expression, not negate)
    if isinstance(expr, cst.BooleanOperation) or (
        isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr))
    ):  # `a and b`, or Triton's own `(a) & (b)`
        left, right = lane_terms(expr.left, negate), lane_terms(expr.right, negate)
        if left is None or right is None:
            return None
        conjunction = isinstance(expr.operator, (cst.And, cst.BitAnd))
        if conjunction != negate:  # a conjunction (De Morgan for a negated `or`)
            return [*left, *right]
        if isinstance(expr.left, cst.Name):  # `tensor | flag`: a flag first would take the tensor as a constexpr
            left, right = right, left
        return [f"({' & '.join(left)} | {' & '.join(right)})"]
    if isinstance(expr, cst.Name) and not negate:
        return [expr.value]  # a flag (`count_include_pad`), the same for every lane
    if isinstance(expr, cst.Comparison):
        parts = []
        left = expr.left
        for target in expr.comparisons:
            symbol = OPERATORS.get(type(target.operator))
            if symbol is None:
                return None
            if negate:
                symbol = NEGATED[symbol]
            parts.append(f"({code(left)} {symbol} {code(target.comparator)})")
            left = target.comparator
        return parts if not negate or len(parts) == 1 else [f"({' | '.join(parts)})"]
    return None
