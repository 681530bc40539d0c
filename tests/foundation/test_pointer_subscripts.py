"""`diagnose.pointer_subscripts`: the one reading of which subscripts index a pointer parameter like an
array, shared by TRI032 and the pointer-subscript rewrite (they sit side by side in the source layer and
may not import each other)."""

from __future__ import annotations

import ast
import doctest

from diagnose import pointer_subscripts


def resolve(node: ast.AST) -> str | None:
    return ast.unparse(node).replace("tl.", "triton.language.", 1)


def function(source: str) -> ast.FunctionDef:
    return ast.parse(source).body[0]


def test_examples_in_the_docstring():
    assert doctest.testmod(pointer_subscripts).failed == 0


def test_a_parameter_indexed_like_an_array_is_a_pointer_subscript():
    fn = function(
        "def k(x_ptr, out_ptr, w, b, strides, SHAPE: tl.constexpr, S: 'tl.constexpr'):\n"
        "    local = (x_ptr, w) + strides[0] + tl.load(w + strides[1])\n"
        "    out_ptr[x_ptr[0] + w[n, c]] = local[0] + SHAPE[1] + S[0] + b[:, None] + b[None] + b[:]\n"
        "    out_ptr[:] += w[c]\n"
        "    del x_ptr[1]\n"
    )
    found = pointer_subscripts.pointer_subscripts(fn, resolve)
    assert [ast.unparse(s) for s in found] == [
        "out_ptr[x_ptr[0] + w[n, c]]",
        "x_ptr[0]",
        "w[n, c]",
        "out_ptr[:]",
        "w[c]",
        "x_ptr[1]",
    ]
    assert [ast.unparse(i) if i else None for i in map(pointer_subscripts.element_index, found)] == [
        "x_ptr[0] + w[n, c]",
        "0",
        None,
        None,
        "c",
        "1",
    ]
