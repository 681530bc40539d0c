"""Which parameters of a `@triton.jit` function size a block, and so must be compile-time constants.

A block's shape is fixed when the kernel compiles: the bounds of `tl.arange(start, end)` and the shape
of `tl.zeros(shape, ...)` / `tl.full(shape, ...)` must be `tl.constexpr`. A plain parameter written
there fails to compile ("arange's arguments must be of type tl.constexpr"), and on the interpreter
(`TRITON_INTERPRET=1`) too. Triage's TRI028 (block-size-not-constexpr) reports such parameters and
the `constexpr-block-size` rewrite annotates them; both read them here, each naming calls its own way
(`resolve`: a call's function to its dotted name, `tl.arange` to `triton.language.arange`).

    >>> import ast
    >>> from diagnose.syntax import parse
    >>> fn = parse("def k(x, n, BLOCK: tl.constexpr):\\n    a = tl.zeros([n, BLOCK], tl.float32)").body[0]
    >>> resolve = lambda f: ast.unparse(f).replace("tl.", "triton.language.")
    >>> sorted(block_params(fn, resolve))
    ['n']
"""

from __future__ import annotations

import ast
from typing import Callable

Resolve = Callable[[ast.AST], "str | None"]
LANGUAGE = "triton.language."
ARANGE = LANGUAGE + "arange"
SHAPED = (LANGUAGE + "zeros", LANGUAGE + "full")


def arange_bounds(call: ast.Call) -> tuple[ast.AST | None, ast.AST | None]:
    """`tl.arange(start, end)`'s bounds, positional or by keyword; (None, None) where one is missing."""
    args = list(call.args) + [k.value for k in call.keywords if k.arg in ("start", "end")]
    return (args[0], args[1]) if len(args) >= 2 else (None, None)


def block_sizes(fn: ast.FunctionDef, resolve: Resolve) -> list[ast.Name]:
    """The names written as a block's size in `fn` (an arange's bounds, each dimension of a `tl.zeros` or
    `tl.full` shape), in source order."""
    out = []
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        name = resolve(call.func)
        if name == ARANGE:
            sizes = list(arange_bounds(call))
        elif name in SHAPED:
            shape = next((k.value for k in call.keywords if k.arg == "shape"), call.args[0] if call.args else None)
            sizes = list(shape.elts) if isinstance(shape, (ast.List, ast.Tuple)) else [shape]
        else:
            continue
        out += [s for s in sizes if isinstance(s, ast.Name)]
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def constexpr_params(fn: ast.FunctionDef, resolve: Resolve) -> frozenset[str]:
    """Parameters annotated `tl.constexpr` (through any alias), or with the string `"tl.constexpr"`,
    which Triton reads too."""
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    return frozenset(a.arg for a in args if _is_constexpr(a.annotation, resolve))


def sizing_params(fn: ast.FunctionDef, resolve: Resolve) -> dict[str, list[ast.Name]]:
    """The parameters of `fn` that size a block (`block_sizes`), annotated or not, each with the places it
    does, in parameter order."""
    sizes = block_sizes(fn, resolve)
    found = {
        a.arg: [n for n in sizes if n.id == a.arg] for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    }
    return {p: where for p, where in found.items() if where}


def block_params(fn: ast.FunctionDef, resolve: Resolve) -> dict[str, list[ast.Name]]:
    """`sizing_params` not annotated `tl.constexpr`: what fails to compile. One the body assigns is
    included: annotating it would not help (an assignment makes a constexpr a run-time value again),
    which the caller decides about."""
    constexprs = constexpr_params(fn, resolve)
    return {p: where for p, where in sizing_params(fn, resolve).items() if p not in constexprs}


def _is_constexpr(annotation: ast.expr | None, resolve: Resolve) -> bool:
    if isinstance(annotation, ast.Constant):
        return isinstance(annotation.value, str) and annotation.value.endswith("constexpr")
    return annotation is not None and (resolve(annotation) or "").endswith("constexpr")
