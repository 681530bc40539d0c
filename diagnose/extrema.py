"""Which `tl.max` / `tl.min` calls are written where the elementwise `tl.maximum` / `tl.minimum` is meant.
Both are reductions whose second positional argument is the axis; LLM-written first versions write
`tl.max(x, 0.0)` (a ReLU), `tl.max(0, x)` or `tl.min(tl.max(x, 0.0), 127.0)` (a clamp), which compile
nowhere and which the interpreter rejects too. Only literals decide, so no reduction is taken for one:
a call counts when it is spelled through a name for triton.language (`tl.max`, `triton.language.max`),
has exactly two positional arguments and no keyword, and either its first argument is a number (`0`,
`-1.0`, `float("inf")`: a number has no axis to reduce) or its second is a float (`0.0`, `-128.0`,
`float("-inf")`: an axis is an int). `tl.max(x, 0)`, `tl.max(x, axis=1)` and `tl.max(x, AXIS)` are
reductions. Triage's TRI031 (reduction-as-elementwise) reports such calls and the `elementwise-max`
rewrite renames them; both read them here, each naming calls its own way (`resolve`: a call's function to
its dotted name, `tl.max` to `triton.language.max`).

    >>> import ast
    >>> from diagnose.syntax import parse
    >>> resolve = lambda f: ast.unparse(f).replace("tl.", "triton.language.")
    >>> fn = parse("def k(x):\\n    return tl.max(x, 0.0) + tl.min(0, x) + tl.max(x, 0) + tl.max(x, axis=0)").body[0]
    >>> [(ast.unparse(c), elementwise_name(c, resolve)) for c in elementwise_calls(fn, resolve)]
    [('tl.max(x, 0.0)', 'maximum'), ('tl.min(0, x)', 'minimum')]
"""

from __future__ import annotations

import ast

from diagnose.blocks import LANGUAGE, Resolve

ELEMENTWISE = {LANGUAGE + "max": "maximum", LANGUAGE + "min": "minimum"}


def elementwise_name(call: ast.Call, resolve: Resolve) -> str | None:
    """`maximum` / `minimum` for a `tl.max` / `tl.min` call written with two values, else None."""
    name = ELEMENTWISE.get(resolve(call.func) or "") if isinstance(call.func, ast.Attribute) else None
    if name is None or call.keywords or len(call.args) != 2 or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    first, second = call.args
    return name if _number(first) or _float(second) else None


def elementwise_calls(fn: ast.FunctionDef, resolve: Resolve) -> list[ast.Call]:
    """The calls in `fn` that `elementwise_name` names, in source order (an outer one before those in it)."""
    found = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and elementwise_name(n, resolve)]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _unsigned(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return node


def _number(node: ast.expr) -> bool:
    """An int or float literal, maybe signed, or `float(...)`."""
    node = _unsigned(node)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return _float(node)


def _float(node: ast.expr) -> bool:
    """A float literal, maybe signed, or `float(...)` (`float("-inf")`): never an axis."""
    node = _unsigned(node)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, float)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
        and not node.keywords
    )
