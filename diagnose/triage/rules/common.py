"""Predicates several rules share: known values of sizes, tile dimensions, pointer arguments."""

from __future__ import annotations

import ast
import re
from typing import Any, Iterator

from diagnose.triage.context import Context, HostFunction, Variant
from diagnose.triage.kernel import Kernel

# Tile dimension names as Triton code spells them: BLOCK_M, BLOCK_SIZE_M, BM, TILE_M, ...
DIM_NAME = {d: re.compile(rf"^(BLOCK|TILE)(_SIZE)?_{d}$|^B{d}$") for d in "MNK"}


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def value_of(expr: ast.AST | None, ctx: Context, variant: Variant | None = None) -> int | None:
    """An int an expression is known to have in `variant` (literals, constexprs, module constants)."""
    if isinstance(expr, ast.Constant):
        v = expr.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(expr, ast.Name):
        if variant is not None and variant.int(expr.id) is not None:
            return variant.int(expr.id)
        v = ctx.constants.get(expr.id)
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        a, b = value_of(expr.left, ctx, variant), value_of(expr.right, ctx, variant)
        if a is None or b is None or (isinstance(expr.op, ast.FloorDiv) and b == 0):
            return None
        op = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}
        return op[type(expr.op)](a, b)
    return None


def arange_bounds(call: ast.Call) -> tuple[ast.AST | None, ast.AST | None]:
    args = list(call.args) + [k.value for k in call.keywords if k.arg in ("start", "end")]
    return (args[0], args[1]) if len(args) >= 2 else (None, None)


def arange_sizes(ctx: Context, kernel: Kernel, variant: Variant) -> list[tuple[int, ast.AST, str]]:
    """(size, where the size was written, its name) for every `tl.arange` of known size."""
    out = []
    for call in kernel.calls("arange"):
        start, end = arange_bounds(call)
        a, b = value_of(start, ctx, variant), value_of(end, ctx, variant)
        if a is not None and b is not None:
            named = isinstance(end, ast.Name)
            where = variant.where(end.id) if named else call
            out.append((b - a, where, end.id if named else "tl.arange"))
    return out


def dot_dims(kernel: Kernel) -> dict[str, str]:
    """{"M": "BLOCK_SIZE_M", ...}: the constexpr parameters that name the dot tile, if any."""
    out = {}
    for name in kernel.params:
        for dim, pattern in DIM_NAME.items():
            if pattern.match(name) and name in kernel.constexprs:
                out.setdefault(dim, name)
    return out


def pointer_of(call: ast.Call) -> ast.AST | None:
    """The pointer argument of tl.load / tl.store / tl.atomic_*."""
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "pointer"), None)


def keyword(call: ast.Call, name: str, position: int | None = None) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def host_calls(fn: HostFunction) -> Iterator[ast.Call]:
    """Calls in a host function's own body (not in nested functions or lambdas)."""
    todo = list(ast.iter_child_nodes(fn.node))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def fmt(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)
