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
    """Names bound to an expression with `tl.arange(0, C)` for a constexpr C -> C; and each such call as
    written (`tl.arange(0, BLOCK_M)`) -> C, for offsets written inline in a pointer
    (`(row_start + tl.arange(0, BLOCK_M))[:, None]`, as `axis_names` reports them)."""
    out = {}
    for name, values in assignments(kernel).items():
        for value in values:
            for call in calls(value, "arange"):
                size = _arange_size(kernel, call)
                if size is not None:
                    out[name] = size
    for call in calls(kernel.node.body, "arange"):
        size = _arange_size(kernel, call)
        if size is not None:
            out[code(call)] = size
    return out


def _arange_size(kernel: Kernel, call: cst.Call) -> str | None:
    size = dotted(call.args[1].value) if len(call.args) == 2 else None
    return size if size in kernel.constexprs else None


def axis_names(pointer: cst.BaseExpression, bound: dict | None = None, depth: int = 0) -> tuple[set[str], set[str]]:
    """Names indexed as rows (`x[:, None]`) and as columns (`x[None, :]`) in a pointer expression; of an
    expression so indexed (`(k0 + rk)[None, :]`, the K offset of the loop written inline), each name and
    each `tl.arange(...)` call as written (`arange_sizes` maps both to their tile). With `bound`, a name
    of the pointer bound once is read where it is bound (`a_offs = rows[:, None] * s + cols[None, :]`,
    then `tl.load(a_ptr + a_offs)`)."""
    rows, cols = set(), set()
    for node in walk(pointer):
        if isinstance(node, cst.Subscript) and len(node.slice) == 2:
            first, second = (s.slice for s in node.slice)
            if isinstance(node.value, cst.Name):
                found = {node.value.value}
            else:
                found = names(node.value) | {code(call) for call in calls(node.value, "arange")}
            if isinstance(first, cst.Slice) and isinstance(second, cst.Index) and dotted(second.value) == "None":
                rows |= found
            if isinstance(second, cst.Slice) and isinstance(first, cst.Index) and dotted(first.value) == "None":
                cols |= found
    if bound is not None and depth < 2 and not rows and not cols:
        for name in names(pointer):
            if len(bound.get(name, ())) == 1:
                more_rows, more_cols = axis_names(bound[name][0], bound, depth + 1)
                rows, cols = rows | more_rows, cols | more_cols
    return rows, cols


def index_tiles(found: set[str], bound: dict, sizes: dict[str, str], depth: int = 0) -> set[str]:
    """The arange-size constexprs behind index names, through names bound once (`keys = start + offs_n`,
    `rows = tl.where(offs_m < M, offs_m, 0)`)."""
    out: set[str] = set()
    for name in found:
        if name in sizes:
            out.add(sizes[name])
        elif depth < 3 and len(bound.get(name, ())) == 1:
            out |= index_tiles(names(bound[name][0]), bound, sizes, depth + 1)
    return out


def operand_pointer(
    kernel: Kernel, operand: cst.BaseExpression, bound: dict, pointers: dict | None = None
) -> cst.BaseExpression | None:
    """The pointer of the one `tl.load` a dot operand is (directly or through a name), else None. A name
    bound several times counts where every binding loads the same pointer or keeps the tile's shape
    (`_same_tile`): a cast after the load (`a = tl.load(p); a = a.to(tl.float16)`), a triangular mask
    (`a = tl.where(tril, a, 0.0)`), the same load before the loop and in it; not `a = tl.trans(a)`. A pointer
    name is read at its first binding in `pointers` (`bound` where not given): `a_ptrs = base + ...`
    before the loop, later `a_ptrs += step` or `a_block = tl.advance(a_block, ...)` in it. A cast written
    in the dot itself (`tl.dot(a.to(tl.float32), b.to(tl.float32))`) is the tile it casts."""
    while (
        isinstance(operand, cst.Call)
        and isinstance(operand.func, cst.Attribute)
        and operand.func.attr.value in ("to", "cast")
        and isinstance(operand.func.value, cst.Name)
    ):
        operand = operand.func.value
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
        a_rows, a_cols = axis_names(a, bound)
        b_rows, b_cols = axis_names(b, bound)

        def size(found: set[str]) -> str | None:
            tiles = index_tiles(found, bound, sizes)
            return tiles.pop() if len(tiles) == 1 else None

        m, k, k2, n = size(a_rows), size(a_cols), size(b_rows), size(b_cols)
    if any(t is not None and t not in kernel.constexprs for t in (m, n, k, k2)):
        return None
    if None in (m, n, k) or k != k2:
        return None
    return DotTiles(m, n, k, dot, loop)
