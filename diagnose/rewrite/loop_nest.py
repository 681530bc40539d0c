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
