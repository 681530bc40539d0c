from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import MEMORY_ACCESSES, is_compile_time, pointer_of


class DivModIndex(Rule):
    """## What it finds
    Block offsets split with `//` or `%` by a runtime value (`row = offs // n_cols`,
    `col = offs % n_cols`) and used to address memory.

    ## Why it is slow
    Flattened div/mod indexing hides the 2-D structure from the Ascend compiler: it cannot prove the
    inner axis contiguous, so the access becomes discrete and is lowered to scalar loops (a loop of
    single-element loads in triton-ascend's ttadapter IR). Integer division is also a slow vector
    op. The row wrap of the matmul tutorial (`offs_am = (pid_m * BLOCK_M + arange) % M` under a
    pointer advanced each K step) is the commonest case: masks keep the 2-D DMA. Only runtime
    divisors are flagged (see Known false positives for constant ones).

    ## Example
    ```python
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + (offs // n_cols) * stride + offs % n_cols)
    ```

    ## Use instead
    ```python
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :])
    ```
    or set `enable_linearize` for triton-ascend.

    ## Known false positives
    Read against 25 findings on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (`benchmarks/triage_precision/ASC006.csv`). It now accepts:
    - compile-time divisors however spelled: a local literal (`per_word = 8; offs // per_word`),
      a constexpr expression (`% (HEAD_DIM // 2)`), a constexpr alias or its cast
      (`bs = BLOCK; r % bs.to(tl.uint32)`), a `"tl.constexpr"` string annotation;
    - a `%` or `//` of data rather than offsets: random keys (`tl.randint`, `tl.philox`), sorted
      values, block loads (an index loaded from memory is ASC005's);
    - a split of the row axis only of a loaded 2-D tile whose columns stay plain
      (`(offs_k[:, None] // group) * stride + offs_n[None, :]`): triton-ascend keeps one contiguous
      DMA per row (checked in the ttadapter IR). Still flagged when that tile is stored, when its
      pointer is carried across a loop (`p += ...`, the matmul `% M` wrap) or when it has no column
      axis (`[R, 1]`): those compile to scalar loops;
    - chained splits (`idx // W // H % C`) give one finding, at the innermost split.
    Still reported though arguably not actionable: splits that are the operator itself (the
    Kronecker product's `offs // N2`, a per-row channel gather in instance norm). Compile-time
    divisors scalarize by default too (`offs // 8` gives a scalar loop in ttadapter) but are left
    out: they are not what the message says, and `enable_linearize` covers the reshape case.

    ## Targets
    ascend.

    ## References
    triton-ascend `compiler.py` (`enable_linearize` adds `--triton-linearize` to the ttadapter stage).
    """

    code = "ASC006"
    name = "div-mod-index"
    message = "`{expr}` splits block offsets with {op} by a runtime value; the access scalarizes"
    fix_title = "Index with 2-D offsets (rows[:, None], cols[None, :]) instead of // and %"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            address_names: set[str] = set()
            address_nodes: set[int] = set()
            for call in kernel.calls("load", "store"):
                ptr = pointer_of(call)
                if ptr is not None:
                    address_names |= kernel.sources(ptr)
                    address_nodes |= {id(n) for n in ast.walk(ptr)}

            def splits(node) -> bool:
                """A `//` or `%` of block offsets by a runtime value (before asking where it goes)."""
                return (
                    isinstance(node, ast.BinOp)
                    and isinstance(node.op, (ast.FloorDiv, ast.Mod))
                    and not is_compile_time(node.right, kernel, ctx)
                    and kernel.is_block(node.left)
                    and not _is_data(kernel, node.left)
                )

            for node in ast.walk(kernel.node):
                if not splits(node):
                    continue
                # `(idx // a) % b`, `idx // W // H`: one finding, at the innermost split
                if any(splits(inner) for inner in ast.walk(node.left)):
                    continue
                assigned = _assigned_name(kernel, node)
                if not (id(node) in address_nodes or assigned & address_names):
                    continue
                if _row_axis_of_loaded_tile(kernel, node, assigned):
                    continue
                yield self.hit(node, expr=ast.unparse(node), op="`//`" if isinstance(node.op, ast.FloorDiv) else "`%`")


# Calls whose result is data (loaded, random, sorted values), not offsets: a `%` of random keys or a
# `//` of loaded indices is not flattened indexing (an index loaded from memory is ASC005's).
_DATA_CALLS = {
    "load",
    "rand",
    "randn",
    "randint",
    "randint4x",
    "philox",
    "sort",
    "argsort",
    "topk",
    "gather",
    "histogram",
}


def _data_call(kernel, node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in _DATA_CALLS:
        return False
    if name == "load":  # a scalar load (`tl.load(starts + pid)`) gives a base offset, not data lanes
        ptr = pointer_of(node)
        return ptr is not None and kernel.is_block(ptr)
    return True


def _holds_data(kernel, value, names) -> bool:
    return any((isinstance(n, ast.Name) and n.id in names) or _data_call(kernel, n) for n in ast.walk(value))


def _is_data(kernel, expr) -> bool:
    return _holds_data(kernel, expr, kernel.names_where(_holds_data))


def _row_axis_of_loaded_tile(kernel, node, assigned: set[str]) -> bool:
    """`(offs_k[:, None] // group) * stride + offs_n[None, :]` read by a load: a split of the row
    axis only of a 2-D tile whose columns stay plain. triton-ascend keeps the inner axis and
    lowers the access to one contiguous DMA per row, not to scalar loads. Not when the rows are
    stored or atomically updated, when the pointer is carried across a loop (`p += ...`), or when
    the tile has no column axis (an `[R, 1]` gather is one element per row): those scalarize."""
    if not _column_vector(kernel, node.left, frozenset()):
        return False
    reached = False
    for call in kernel.calls(*MEMORY_ACCESSES):
        ptr = pointer_of(call)
        if ptr is None:
            continue
        sources = kernel.sources(ptr)
        if not (assigned & sources or any(n is node for n in ast.walk(ptr))):
            continue
        if kernel.qualname(call.func) != "triton.language.load":
            return False
        if sources & _carried(kernel) or not _has_column_axis(kernel, ptr, sources):
            return False
        reached = True
    return reached


def _column_vector(kernel, expr, seen: frozenset[str]) -> bool:
    """`x[:, None]`-shaped: a block with one column (a row index of a 2-D tile)."""
    if isinstance(expr, ast.Subscript):
        return _slice_pattern(expr.slice) == ("slice", "none")
    if isinstance(expr, ast.Name):
        values = kernel.assigns.get(expr.id)
        if not values or expr.id in seen:
            return False
        return all(_column_vector(kernel, v, seen | {expr.id}) for v in values)
    if isinstance(expr, ast.BinOp):
        sides = [expr.left, expr.right]
        return any(_column_vector(kernel, s, seen) for s in sides) and all(
            _column_vector(kernel, s, seen) or not kernel.is_block(s) for s in sides
        )
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "to":
        return _column_vector(kernel, expr.func.value, seen)
    return False


def _slice_pattern(index) -> tuple[str, ...]:
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    return tuple(
        "none" if isinstance(e, ast.Constant) and e.value is None else "slice" if isinstance(e, ast.Slice) else "other"
        for e in elts
    )


def _has_column_axis(kernel, ptr, sources: set[str]) -> bool:
    """The address has a `[None, :]` term: a 2-D tile with a column axis."""
    exprs = [ptr] + [v for name in sources for v in kernel.assigns.get(name, ())]
    return any(
        isinstance(n, ast.Subscript) and _slice_pattern(n.slice) == ("none", "slice")
        for e in exprs
        for n in ast.walk(e)
    )


def _carried(kernel) -> set[str]:
    """Names advanced in place or from themselves (`p += BLOCK`, `p = p + BLOCK`): pointers carried
    across loop iterations."""
    out = {
        n.target.id for n in ast.walk(kernel.node) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
    }
    out |= {
        name
        for name, values in kernel.assigns.items()
        if any(isinstance(m, ast.Name) and m.id == name for v in values for m in ast.walk(v))
    }
    return out


def _assigned_name(kernel, node) -> set[str]:
    """The names the statement holding `node` assigns (`row = offs // n_cols` -> {'row'})."""
    for anc in kernel.ancestors(node):
        if isinstance(anc, ast.Assign):
            return {t.id for t in anc.targets if isinstance(t, ast.Name)}
        if isinstance(anc, ast.stmt):
            return set()
    return set()
