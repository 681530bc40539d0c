"""`diagnose.blocks`: the one reading of which parameters size a block, shared by TRI028 and the
constexpr-block-size rewrite (they sit side by side in the source layer and may not import each other)."""

from __future__ import annotations

import ast
import doctest

from diagnose import blocks


def resolve(node: ast.AST) -> str | None:
    return ast.unparse(node).replace("tl.", "triton.language.", 1)


def function(source: str) -> ast.FunctionDef:
    return ast.parse(source).body[0]


def test_examples_in_the_docstring():
    assert doctest.testmod(blocks).failed == 0


def test_arange_bounds_shapes_and_keywords_size_blocks():
    fn = function(
        "def k(a, b, c, d, e: 'tl.constexpr', f: tl.constexpr, g):\n"
        "    x = tl.arange(a, end=b)\n"
        "    y = tl.zeros((c, e), dtype=tl.float32) + tl.full(shape=[d], value=0, dtype=tl.int32)\n"
        "    z = tl.arange(0, f) + tl.arange(0, 2 * g)\n"
    )
    assert list(blocks.block_params(fn, resolve)) == ["a", "b", "c", "d"]
    assert blocks.constexpr_params(fn, resolve) == {"e", "f"}
    assert [n.id for n in blocks.block_sizes(fn, resolve)] == ["a", "b", "c", "e", "d", "f"]


def test_other_modules_functions_do_not_count():
    fn = function("def k(n):\n    x = np.arange(0, n) + torch.zeros([n])\n")
    assert blocks.block_params(fn, resolve) == {}
