"""`diagnose.extrema`: the one reading of which `tl.max` / `tl.min` calls mean the elementwise maximum,
shared by TRI031 and the elementwise-max rewrite (they sit side by side in the source layer and may not
import each other)."""

from __future__ import annotations

import ast
import doctest

from diagnose import extrema


def resolve(node: ast.AST) -> str | None:
    return ast.unparse(node).replace("tl.", "triton.language.", 1)


def function(source: str) -> ast.FunctionDef:
    return ast.parse(source).body[0]


def test_examples_in_the_docstring():
    assert doctest.testmod(extrema).failed == 0


def test_a_max_or_min_of_a_number_or_over_a_float_means_the_elementwise_one():
    fn = function(
        "def k(x, AXIS: tl.constexpr):\n"
        "    a = tl.max(x, 0.0) + tl.min(-1, x) + tl.max(+2.5, x) + tl.min(x, -float('inf'))\n"
        "    b = tl.max(x, 0) + tl.min(x, -1) + tl.max(x, AXIS) + tl.max(x, axis=0) + tl.max(x, 0.0, keep_dims=True)\n"
        "    c = tl.max(x, True) + tl.max(*x) + tl.max(x) + np.max(x, 0.0) + max(x, 0.0) + tl.maximum(x, 0.0)\n"
    )
    found = extrema.elementwise_calls(fn, resolve)
    assert [ast.unparse(c) for c in found] == [
        "tl.max(x, 0.0)",
        "tl.min(-1, x)",
        "tl.max(+2.5, x)",
        "tl.min(x, -float('inf'))",
    ]
    assert [extrema.elementwise_name(c, resolve) for c in found] == ["maximum", "minimum", "maximum", "minimum"]
