from __future__ import annotations

import ast
from typing import NamedTuple

from diagnose.triage.kernel import TL, Kernel
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import pointer_of

# How loaded data varies across the lanes of an address, in increasing order of cost:
NONE, ROW, ELEMENT = 0, 1, 2  # not at all (or one scalar per program) / per row only / per element
SCALAR_REDUCTIONS = {TL + n for n in ("sum", "max", "min", "reduce", "argmax", "argmin", "xor_sum")}
MEMORY = {
    TL + n
    for n in (
        "load",
        "store",
        "atomic_add",
        "atomic_max",
        "atomic_min",
        "atomic_and",
        "atomic_or",
        "atomic_xor",
        "atomic_xchg",
        "atomic_cas",
    )
}


class Spread(NamedTuple):
    level: int = NONE
    carrier: str | None = None
    axes: tuple[tuple[int, ...], int] | None = None  # a ROW's (axes it varies along, of how many)
    scaled: bool = False  # a ROW multiplied by a stride: it picks rows, not elements within one


def data_spread(kernel: Kernel, expr: ast.AST, memo: dict | None = None) -> tuple[int, str | None]:
    """How values loaded from memory *as blocks* vary across the lanes of `expr`, and the name that
    carries them. A load through a scalar pointer (`tl.load(start_ptr + pid)`) gives one value per
    program: an address built from it is still base + contiguous range, not a gather. A loaded block
    expanded along a leading axis only (`idx[:, None] * D + cols[None, :]`) varies per row: each row
    is one contiguous run. So does one expanded along the last axis and scaled by a row stride, the
    same gather transposed for a dot (`idx[None, :] * stride + dims[:, None]`); unscaled on the last
    axis (`rows[:, None] * N + idx[None, :]`) it picks single elements. Two loaded blocks spread along
    different axes, or anything else that carries a loaded block, vary per element."""
    found = _spread(kernel, expr, {} if memo is None else memo)
    if found.level == ROW and found.axes and found.axes[1] - 1 in found.axes[0] and not found.scaled:
        return ELEMENT, found.carrier
    return found.level, found.carrier


def _spread(kernel: Kernel, expr: ast.AST, memo: dict) -> Spread:
    block_loads = {id(c) for c in kernel.calls("load") if (p := pointer_of(c)) is not None and kernel.is_block(p)}

    def of_name(name: str, use: ast.AST) -> Spread:
        # assignments in the other arm of an if/else than the use cannot reach it (a name reused
        # for a scalar in one branch and a block in the other), nor can one made after the use
        # outside any loop around both (`bias = tl.load(bias + rn)`: the address reads the pointer)
        values = [
            v for v in kernel.assigns.get(name, ()) if not _exclusive(kernel, v, use) and not _later(kernel, v, use)
        ]
        key = (name, tuple(id(v) for v in values))
        if key in memo:
            return memo[key]
        memo[key] = Spread()  # cycles (x = x + ...) add nothing
        best = Spread()
        for value in values:
            found = walk(value)
            if found.carrier == "tl.load":
                found = found._replace(carrier=name)
            best = _join(best, found)
        memo[key] = best
        return best

    def walk(node: ast.AST) -> Spread:
        if isinstance(node, ast.Name):
            return of_name(node.id, node)
        if isinstance(node, ast.Constant):
            return Spread()
        if isinstance(node, ast.Call):
            name = kernel.qualname(node.func)
            if id(node) in block_loads:
                return Spread(ELEMENT, "tl.load")
            if name in MEMORY:
                return Spread()  # a scalar load (or a store's result): one value per program
            if name in SCALAR_REDUCTIONS and not _keeps_axes(kernel, node):
                return Spread()
            parts = list(node.args) + [k.value for k in node.keywords]
            if isinstance(node.func, ast.Attribute) and not (name or "").startswith("triton."):
                parts.append(node.func.value)  # x.to(...), x.cast(...): the value itself flows on
            return _max(walk(p) for p in parts)
        if isinstance(node, ast.Subscript):
            found = walk(node.value)
            axes = _kept_axes(node.slice)
            if found.level == ELEMENT and axes is not None:
                return Spread(ROW, found.carrier, axes)
            return found
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            left, right = walk(node.left), walk(node.right)
            for row, other, factor in ((left, right, node.right), (right, left, node.left)):
                if (
                    row.level == ROW
                    and other.level == NONE
                    and not (isinstance(factor, ast.Constant) and factor.value == 1)
                ):
                    return row._replace(scaled=True)
            return _join(left, right)
        if isinstance(node, ast.Attribute):
            return Spread()  # x.dtype, x.shape, tl.float32: not values
        return _max(walk(child) for child in ast.iter_child_nodes(node))

    return walk(expr)


def _later(kernel: Kernel, value: ast.AST, use: ast.AST) -> bool:
    """The assignment of `value` happens after `use` (the use lies before the end of the assigned
    expression, in it or in an earlier statement) and no loop encloses both, so it cannot reach it."""
    if (use.lineno, use.col_offset) >= (value.end_lineno, value.end_col_offset):
        return False
    loops = {id(a) for a in kernel.ancestors(use) if isinstance(a, (ast.For, ast.While))}
    return not any(id(a) in loops for a in kernel.ancestors(value) if isinstance(a, (ast.For, ast.While)))


def _exclusive(kernel: Kernel, a: ast.AST, b: ast.AST) -> bool:
    """`a` and `b` sit in different arms (body / else) of one `if`: neither reaches the other."""
    arms_a = _arms(kernel, a)
    for branch, arm in _arms(kernel, b).items():
        if branch in arms_a and arms_a[branch] != arm:
            return True
    return False


def _arms(kernel: Kernel, node: ast.AST) -> dict[int, str]:
    """{id(if statement): "body" or "orelse"} for every `if` enclosing `node`."""
    out: dict[int, str] = {}
    child = node
    for parent in kernel.ancestors(node):
        if isinstance(parent, ast.If) and child is not parent.test:
            out[id(parent)] = "body" if any(s is child for s in parent.body) else "orelse"
        child = parent
    return out


def _join(a: Spread, b: Spread) -> Spread:
    """Both spreads in one value: per-row spreads along different axes make a per-element one."""
    if a.level == ROW and b.level == ROW:
        if a.axes != b.axes:
            return Spread(ELEMENT, a.carrier)
        return a._replace(scaled=a.scaled and b.scaled)
    return b if b.level > a.level else a


def _max(items) -> Spread:
    best = Spread()
    for item in items:
        best = _join(best, item)
    return best


def _keeps_axes(kernel: Kernel, call: ast.Call) -> bool:
    """A reduction over one axis of a 2-D block still gives a block."""
    axis = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "axis"), None)
    if axis is None or isinstance(axis, ast.Constant) and axis.value is None:
        return False
    return kernel.is_2d


def _kept_axes(index: ast.AST) -> tuple[tuple[int, ...], int] | None:
    """The axes a block indexed with `[:, None]`, `[None, :]` (`[:, None, None]`...) spreads over,
    when it leaves at least one axis to something else (where contiguous runs can live); None for
    any other index."""
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    none = [isinstance(e, ast.Constant) and e.value is None for e in elts]
    if len(elts) < 2 or not any(none):
        return None
    return tuple(i for i, is_none in enumerate(none) if not is_none), len(elts)


class IndirectGatherLoad(Rule):
    """## What it finds
    A `tl.load`/`tl.store` whose address differs per element by values loaded from memory as a block
    (an index tensor): `x = tl.load(src_ptr + tl.load(idx_ptr + offs))`, a binary search's probes, a
    scatter to cumsum positions.

    ## Why it is slow
    The NPU's DMA engine moves contiguous bursts; an address computed per element from data compiles
    to a scalar loop, one element per iteration (verified in triton-ascend's ttadapter IR). On GPUs a
    gather is merely uncoalesced; on Ascend it serializes.

    ## Example
    ```python
    idx = tl.load(idx_ptr + offs, mask=mask)
    x = tl.load(src_ptr + idx, mask=mask)
    ```

    ## Use instead
    When the source fits in the UB, load it contiguously once and select there:
    ```python
    table = tl.load(src_ptr + tl.arange(0, TABLE))
    x = tl.gather(table, idx, axis=0)
    ```
    Otherwise gather whole rows (contiguous runs of D elements) rather than single elements.

    ## Known false positives
    Measured on 25 labelled findings of Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (7 true, 15 false, 3 debatable before this section). Now accepted:
    - a scalar loaded per program used as an offset (`start = tl.load(cu_seqlens + pid)`,
      `expert = tl.load(tile_expert + pid)`, a pointer loaded from a pointer array,
      `row = tl.load(idx + pid); tl.load(w + row * D + cols)`): the address is still base plus a
      contiguous range, one DMA;
    - a single-element load at a loaded index (`x_y = tl.load(row_ptr + y)` with a scalar `y`): one
      element either way;
    - row gathers, `idx[:, None] * D + cols[None, :]` (embedding, index_select, MoE token rows): each
      row is a contiguous run and triton-ascend keeps that axis as a slice; nothing cheaper exists
      when the table does not fit the UB;
    - loaded values reaching only the mask, or a scalar reduction of a loaded block (`tl.max(x)`).
    After the held-out labels (2026-12, 8 findings: 2 true, 3 false, 3 debatable), also accepted:
    - the row gather transposed for a dot, `kv_loc[None, :] * stride_kbs + offs_d[:, None]` (paged
      KV caches, sparse-attention column lists): the loaded index is on the last axis but scaled by a
      row stride, so each token's head_dim is one contiguous run, down the leading axis. Unscaled on
      the last axis (`rows[:, None] * N + idx[None, :]`, index_select, quantile) it is still flagged;
    - a name reused for the value loaded through it (`bias = tl.load(bias + rn)`,
      `out_indices = tl.load(out_indices_ptrs)`): an assignment after the use, with no loop around
      both, no longer reaches the use. Inside a loop it still does (`node = tl.load(nxt + node)` is
      a real pointer chase).
    Still misread: a block load through a pointer that is the same for every lane
    (`tl.load(p + pid + tl.zeros_like(offs))`) counts as a block of indices; values passed through a
    `@triton.jit` helper's return are taken to carry whatever its arguments carry; any multiplier
    counts as a row stride (`idx[None, :] * 2 + d[:, None]` passes), and the transposed form is
    accepted without proving the leading axis unit-stride (`offs_d[:, None] * stride_kd` is taken
    for stride 1), nor that triton-ascend moves a run down the leading axis as cheaply as one along
    the last. Not flagged although
    possibly slow: some triton-ascend versions scalarize every discrete access inside a loop, row
    gathers included, and any access whose contiguous run is not a multiple of 32 bytes.

    ## Targets
    ascend.

    ## References
    triton-ascend programming guide, "Transferring Data to the UB and Then Selecting".
    """

    code = "ASC005"
    name = "indirect-gather-load"
    message = "`tl.{op}` address depends on loaded values (`{index}`); the NPU scalarizes gathers"
    fix_title = "Load the source contiguously into the UB and select with tl.gather"
    confidence = "high"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if not kernel.loaded_names():
                continue
            memo: dict = {}
            for call in kernel.calls("load", "store"):
                ptr = pointer_of(call)
                if ptr is None:
                    continue
                spread, carrier = data_spread(kernel, ptr, memo)
                if spread == ELEMENT:
                    yield self.hit(call, op=kernel.qualname(call.func).rsplit(".", 1)[-1], index=carrier)
