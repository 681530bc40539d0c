"""What a matmul kernel's tiles are, read from its `tl.dot` and the loads that feed it.

`dot_tiles(kernel)` follows `acc += tl.dot(a, b)` back to `a = tl.load(<ptr>)` and `b = tl.load(...)`
(through at most one pointer variable, `a_ptrs = a_ptr + ...`, or a block pointer's `tl.make_block_ptr`,
whose `block_shape` names the tiles). In `a`'s pointer, the index used
as rows (`offs_m[:, None]`) and as columns (`offs_k[None, :]`) are names bound to expressions with
`tl.arange(0, BLOCK_M)` and `tl.arange(0, BLOCK_K)`: that gives the M and K tile constexprs; `b`'s
pointer gives K and N. Nothing depends on what the names are called.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.source import Kernel, bindings, calls, code, dotted, names, walk


@dataclass(frozen=True)
class DotTiles:
    """The M, N, K tile constexprs of a kernel's main `tl.dot`, and the loop it runs in."""

    m: str
    n: str
    k: str
    dot: cst.Call
    loop: cst.For | None


def assignments(kernel: Kernel) -> dict[str, list[cst.BaseExpression]]:
    """Every `name = value` in the kernel, at any depth, by name."""
    return bindings(kernel.node.body)


def arange_sizes(kernel: Kernel) -> dict[str, str]:
    """Names bound to an expression with `tl.arange(0, C)` for a constexpr C -> C."""
    out = {}
    for name, values in assignments(kernel).items():
        for value in values:
            for call in calls(value, "arange"):
                size = dotted(call.args[1].value) if len(call.args) == 2 else None
                if size in kernel.constexprs:
                    out[name] = size
    return out


def axis_names(pointer: cst.BaseExpression) -> tuple[set[str], set[str]]:
    """Names indexed as rows (`x[:, None]`) and as columns (`x[None, :]`) in a pointer expression; of an
    expression so indexed (`(k0 + rk)[None, :]`, the K offset of the loop written inline), each name."""
    rows, cols = set(), set()
    for node in walk(pointer):
        if isinstance(node, cst.Subscript) and len(node.slice) == 2:
            first, second = (s.slice for s in node.slice)
            found = {node.value.value} if isinstance(node.value, cst.Name) else names(node.value)
            if isinstance(first, cst.Slice) and isinstance(second, cst.Index) and dotted(second.value) == "None":
                rows |= found
            if isinstance(second, cst.Slice) and isinstance(first, cst.Index) and dotted(first.value) == "None":
                cols |= found
    return rows, cols


def operand_pointer(
    kernel: Kernel, operand: cst.BaseExpression, bound: dict, pointers: dict | None = None
) -> cst.BaseExpression | None:
    """The pointer of the one `tl.load` a dot operand is (directly or through a name), else None. A name
    bound several times counts where every binding loads the same pointer or keeps the tile's shape
    (`_same_tile`): a cast after the load (`a = tl.load(p); a = a.to(tl.float16)`), a triangular mask
    (`a = tl.where(tril, a, 0.0)`), the same load before the loop and in it; not `a = tl.trans(a)`. A pointer
    name is read at its first binding in `pointers` (`bound` where not given): `a_ptrs = base + ...`
    before the loop, later `a_ptrs += step` or `a_block = tl.advance(a_block, ...)` in it."""
    if isinstance(operand, cst.Name) and operand.value in bound:
        values = bound[operand.value]
        loading = [v for v in values if len(calls(v, "load")) == 1]
        read = {code(calls(v, "load")[0].args[0].value) for v in loading if calls(v, "load")[0].args}
        kept = all(len(calls(v, "load")) == 1 or _same_tile(v, operand.value) for v in values)
        if len(read) != 1 or not kept:
            return None
        operand = loading[0]
    loads = calls(operand, "load")
    if len(loads) != 1 or not loads[0].args:
        return None
    pointer = loads[0].args[0].value
    if isinstance(pointer, cst.Name) and pointer.value in (pointers or bound):
        values = (pointers or bound)[pointer.value]
        pointer = values[0] if values else pointer  # `a_ptrs = base + ...`, later `a_ptrs += step`
    return pointer


# Calls that keep a tile's shape: an operand re-bound through them is still the tile it loaded.
ELEMENTWISE = ("to", "where", "maximum", "minimum", "abs", "exp", "cast")


def _same_tile(value: cst.BaseExpression, name: str) -> bool:
    """`value` reads `name` and only keeps its shape (`a.to(tl.float16)`, `tl.where(mask, a, 0.0)`, `a *
    scale`): no call outside `ELEMENTWISE` (`tl.trans(a)` swaps the axes, a reduction drops one)."""
    functions = [dotted(n.func) or "" for n in walk(value) if isinstance(n, cst.Call)]
    return (
        name in names(value) and all(f.rsplit(".", 1)[-1] in ELEMENTWISE for f in functions) and ".T" not in code(value)
    )


def block_shape(pointer: cst.BaseExpression) -> tuple[str | None, str | None] | None:
    """The (rows, columns) tile names of a 2-D `tl.make_block_ptr(..., block_shape=(BLOCK_M, BLOCK_K),
    ...)` (by keyword, or fifth of its positional arguments), else None: a block pointer names its tile
    itself, as first versions and Triton's block-pointer tutorial write matmuls."""
    if not (isinstance(pointer, cst.Call) and (dotted(pointer.func) or "").endswith("make_block_ptr")):
        return None
    shape = next((a.value for a in pointer.args if a.keyword is not None and a.keyword.value == "block_shape"), None)
    positional = [a.value for a in pointer.args if a.keyword is None]
    if shape is None and len(positional) >= 5:
        shape = positional[4]
    if not isinstance(shape, (cst.Tuple, cst.List)) or len(shape.elements) != 2:
        return None
    rows, cols = (dotted(e.value) for e in shape.elements)
    return rows, cols


def dot_tiles(kernel: Kernel) -> DotTiles | None:
    dots = calls(kernel.node.body, "dot")
    if not dots:
        return None
    dot = dots[0]
    if len(dot.args) < 2:
        return None
    bound = everywhere = assignments(kernel)
    loop = next(
        (
            node
            for node in walk(kernel.node.body)
            if isinstance(node, cst.For) and any(c is dot for c in walk(node.body))
        ),
        None,
    )
    if loop is not None:  # the dot's operands as its loop binds them (a bias loaded into `b` after it is another)
        bound = {**bound, **bindings(loop.body)}
    sizes = arange_sizes(kernel)
    a = operand_pointer(kernel, dot.args[0].value, bound, everywhere)
    b = operand_pointer(kernel, dot.args[1].value, bound, everywhere)
    if a is None or b is None:
        return None
    a_block, b_block = block_shape(a), block_shape(b)
    if a_block is not None or b_block is not None:
        if a_block is None or b_block is None:
            return None
        (m, k), (k2, n) = a_block, b_block
    else:
        a_rows, a_cols = axis_names(a)
        b_rows, b_cols = axis_names(b)

        def size(found: set[str]) -> str | None:
            tiles = {sizes[n] for n in found if n in sizes}
            return tiles.pop() if len(tiles) == 1 else None

        m, k, k2, n = size(a_rows), size(a_cols), size(b_rows), size(b_cols)
    if any(t is not None and t not in kernel.constexprs for t in (m, n, k, k2)):
        return None
    if None in (m, n, k) or k != k2:
        return None
    return DotTiles(m, n, k, dot, loop)
