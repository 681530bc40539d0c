from __future__ import annotations

import ast

from diagnose.triage.kernel import TL, Kernel
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import pointer_of

# How loaded data varies across the lanes of an address, in increasing order of cost:
NONE, ROW, ELEMENT = 0, 1, 2  # not at all (or one scalar per program) / per row only / per element
SCALAR_REDUCTIONS = {TL + n for n in ("sum", "max", "min", "reduce", "argmax", "argmin", "xor_sum")}
MEMORY = {TL + n for n in ("load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                           "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas")}


def data_spread(kernel: Kernel, expr: ast.AST, memo: dict | None = None) -> tuple[int, str | None]:
    """How values loaded from memory *as blocks* vary across the lanes of `expr`, and the name that
    carries them. A load through a scalar pointer (`tl.load(start_ptr + pid)`) gives one value per
    program: an address built from it is still base + contiguous range, not a gather. A loaded block
    expanded along a leading axis only (`idx[:, None] * D + cols[None, :]`) varies per row: each row
    is one contiguous run. Anything else that carries a loaded block varies per element."""
    memo = {} if memo is None else memo
    block_loads = {id(c) for c in kernel.calls("load") if (p := pointer_of(c)) is not None and kernel.is_block(p)}

    def of_name(name: str, use: ast.AST) -> tuple[int, str | None]:
        # assignments in the other arm of an if/else than the use cannot reach it (a name reused
        # for a scalar in one branch and a block in the other)
        values = [v for v in kernel.assigns.get(name, ()) if not _exclusive(kernel, v, use)]
        key = (name, tuple(id(v) for v in values))
        if key in memo:
            return memo[key]
        memo[key] = (NONE, None)  # cycles (x = x + ...) add nothing
        best: tuple[int, str | None] = (NONE, None)
        for value in values:
            spread, carrier = walk(value)
            if spread > best[0]:
                best = (spread, name if carrier == "tl.load" else carrier)
        memo[key] = best
        return best

    def walk(node: ast.AST) -> tuple[int, str | None]:
        if isinstance(node, ast.Name):
            return of_name(node.id, node)
        if isinstance(node, ast.Constant):
            return NONE, None
        if isinstance(node, ast.Call):
            name = kernel.qualname(node.func)
            if id(node) in block_loads:
                return ELEMENT, "tl.load"
            if name in MEMORY:
                return NONE, None  # a scalar load (or a store's result): one value per program
            if name in SCALAR_REDUCTIONS and not _keeps_axes(kernel, node):
                return NONE, None
            parts = list(node.args) + [k.value for k in node.keywords]
            if isinstance(node.func, ast.Attribute) and not (name or "").startswith("triton."):
                parts.append(node.func.value)  # x.to(...), x.cast(...): the value itself flows on
            return _max(walk(p) for p in parts)
        if isinstance(node, ast.Subscript):
            spread, carrier = walk(node.value)
            if spread == ELEMENT and _leading_only(node.slice):
                return ROW, carrier
            return spread, carrier
        if isinstance(node, ast.Attribute):
            return NONE, None  # x.dtype, x.shape, tl.float32: not values
        return _max(walk(child) for child in ast.iter_child_nodes(node))

    return walk(expr)


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


def _max(items) -> tuple[int, str | None]:
    best = (NONE, None)
    for item in items:
        if item[0] > best[0]:
            best = item
    return best


def _keeps_axes(kernel: Kernel, call: ast.Call) -> bool:
    """A reduction over one axis of a 2-D block still gives a block."""
    axis = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "axis"), None)
    if axis is None or isinstance(axis, ast.Constant) and axis.value is None:
        return False
    return kernel.is_2d


def _leading_only(index: ast.AST) -> bool:
    """`[:, None]` (and `[:, None, None]`): the block spreads over the leading axis only; the last
    axis, where contiguous runs live, comes from something else."""
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    return len(elts) > 1 and isinstance(elts[-1], ast.Constant) and elts[-1].value is None


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
    Still misread: a block load through a pointer that is the same for every lane
    (`tl.load(p + pid + tl.zeros_like(offs))`) counts as a block of indices; values passed through a
    `@triton.jit` helper's return are taken to carry whatever its arguments carry. Not flagged although
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
