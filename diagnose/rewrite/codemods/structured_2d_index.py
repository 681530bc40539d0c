"""structured-2d-index: a flattened index split with `//` and `%` becomes a 2-D tile of rows x columns."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import fit_launch, relaunch, replace, statements, unique_name
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import (
    LaunchSite,
    cdiv_parts,
    grid_elements,
    grid_shared,
    launched,
    resolve_grid,
    sites_of,
)
from diagnose.rewrite.source import (
    REDUCTIONS,
    Kernel,
    calls,
    code,
    dotted,
    is_tl_call,
    kernels,
    names,
    program_id_names,
    same,
    simple_assignment,
    tl_name,
    walk,
)

# Columns per tile: a power of two up to this many, the rest of the block goes to rows.
MAX_BLOCK_COLS = 256


@dataclass(frozen=True)
class IndexPlan:
    kernel: Kernel
    site: LaunchSite
    offs: cst.SimpleStatementLine
    row: cst.SimpleStatementLine | None  # None: the kernel reads only the column (or only the row)
    col: cst.SimpleStatementLine | None
    masks: tuple[cst.BaseExpression, ...]
    rows: str
    cols: str
    block: str
    grid: cst.BaseExpression
    grid_statement: cst.SimpleStatementLine | None


class Structured2dIndex(Rewrite):
    """## What it changes
    A 1-D kernel over a flattened index — `offs = pid * BLOCK + tl.arange(0, BLOCK)`,
    `row = offs // n_cols`, `col = offs % n_cols` (or only one of them, as a per-column bias reads
    `offs % n_cols` alone), masks `offs < n_rows * n_cols` — becomes a 2-D
    one: a grid of `(cdiv(n_rows, BLOCK_R), cdiv(n_cols, BLOCK_C))` programs, `row` and `col` as a
    column and a row vector of aranges, `offs = row * n_cols + col` (a 2-D tile, so every
    `x_ptr + offs` still addresses the same element) and the masks `(row < n_rows) & (col < n_cols)`.
    `BLOCK` is split on the host: `BLOCK_C = min(next_power_of_2(n_cols), 256)`,
    `BLOCK_R = max(1, BLOCK // BLOCK_C)`.

    ## When it is valid
    Each (row, col) with `row < n_rows` and `col < n_cols` is still computed once, by an elementwise
    body; required: the offsets line has exactly that shape with the only program id; `row`/`col`
    are `offs // C` and `offs % C` for a kernel argument C; every other use of `offs` is an address
    (`ptr + offs`) or the mask `offs < R * C` with R a kernel argument; BLOCK appears only in the
    offsets line; no reduction, scan or shape operation; a 1-D `cdiv` grid; one launch, from any
    function of the module (a module-level `def op(x)`, an autograd `Function.forward`,
    `ModelNew.forward`, at any block depth), where the block split is computed.

    ## Why it is faster
    Integer division and modulo by a run-time value cost tens of instructions per element on GPUs
    and are scalar on Ascend, and they hide the rows' contiguity from the compiler's alignment
    analysis (no vectorized accesses); 2-D indices give both back.

    ## Safety
    Safe: the same elements with the same arithmetic.

    ## Answers
    ASC006 (div-mod-index).

    ## References
    triton-ascend: flattened `//`/`%` indices compile to a scalar loop in the ttadapter IR; 2-D indices
    or `enable_linearize=True` (`--triton-linearize`) give block accesses with no loop. Triton tutorials
    (2-D tiles).
    """

    id = "structured-2d-index"
    title = "2-D structured indices instead of a flattened index split with // and %"
    codes = ("ASC006",)
    evidence = ("ScalarizedAccess",)  # Ascend: a load or store lowered to a scalar loop

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            IndexPlan,
            lambda p: f"flattened index split by {p.cols}",
            "no kernel splits a flattened index with // and %",
        )

    def transform(self, ctx: RewriteContext, plan: IndexPlan) -> str:
        kernel = plan.kernel
        taken = names(kernel.node) | set(kernel.params)
        block_r, block_c = unique_name(taken, f"{plan.block}_R"), unique_name(taken, f"{plan.block}_C")
        pid_r, pid_c = unique_name(taken, "pid_r"), unique_name(taken, "pid_c")
        offs = simple_assignment(plan.offs)[0]
        row = simple_assignment(plan.row)[0] if plan.row is not None else unique_name(taken, "row")
        col = simple_assignment(plan.col)[0] if plan.col is not None else unique_name(taken, "col")
        head = statements(f"""
            {pid_r} = tl.program_id(0)
            {pid_c} = tl.program_id(1)
            {row} = ({pid_r} * {block_r} + tl.arange(0, {block_r}))[:, None]
            {col} = ({pid_c} * {block_c} + tl.arange(0, {block_c}))[None, :]
            {offs} = {row} * {plan.cols} + {col}
            """)
        head[0] = head[0].with_changes(
            leading_lines=[
                *plan.offs.leading_lines,
                cst.EmptyLine(
                    comment=cst.Comment(
                        f"# a 2-D tile of {block_r} rows x {block_c} columns: no division by {plan.cols} per element"
                    )
                ),
            ]
        )
        mask = cst.parse_expression(f"({row} < {plan.rows}) & ({col} < {plan.cols})")
        body = []
        pid_stmt = next((s for s in kernel.statements if simple_assignment(s)[0] in program_id_names(kernel)), None)
        for stmt in kernel.statements:
            if stmt is plan.offs:
                body += head
            elif any(stmt is s for s in (plan.row, plan.col)) or (stmt is pid_stmt and stmt is not plan.offs):
                continue
            else:
                body.append(replace(cst.Module(body=[stmt]), {m: mask for m in plan.masks}).body[0])
        params = [
            p.with_changes(name=cst.Name(block_r)) if p.name.value == plan.block else p
            for p in kernel.node.params.params
        ]
        index = [p.name.value for p in params].index(block_r)
        params.insert(index + 1, params[index].with_changes(name=cst.Name(block_c)))
        params[index] = params[index].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new_kernel = kernel.node.with_changes(
            params=kernel.node.params.with_changes(params=params), body=kernel.node.body.with_changes(body=body)
        )
        rows_host, cols_host = code(plan.site.value(kernel, plan.rows)), code(plan.site.value(kernel, plan.cols))
        block_host = code(plan.site.value(kernel, plan.block))
        host_taken = names(plan.site.host)
        host_r, host_c = unique_name(host_taken, block_r), unique_name(host_taken, block_c)
        grid = cst.parse_expression(f"(triton.cdiv({rows_host}, {host_r}), triton.cdiv({cols_host}, {host_c}))")
        call = plan.site.call
        passes_block = [a.keyword is not None and a.keyword.value == plan.block for a in call.args]
        args = [
            a.with_changes(keyword=cst.Name(block_r), value=cst.Name(host_r)) if passed else a
            for a, passed in zip(call.args, passes_block)
        ]
        position = next(i for i, a in enumerate(args) if a.keyword and a.keyword.value == block_r)
        args.insert(position + 1, args[position].with_changes(keyword=cst.Name(block_c), value=cst.Name(host_c)))
        args[position] = args[position].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        call = call.with_changes(args=args)
        if plan.grid_statement is None:
            call = call.with_changes(func=call.func.with_changes(slice=[cst.SubscriptElement(cst.Index(grid))]))
        call = fit_launch(plan.site, call)
        setup = statements(f"""
            {host_c} = min(triton.next_power_of_2({cols_host}), {MAX_BLOCK_COLS})
            {host_r} = max(1, {block_host} // {host_c})
            """)
        if plan.grid_statement is not None:
            # the grid line is replaced whole, so its new grid goes in here (a mapping entry for the
            # grid inside it would be dropped with the old line)
            new_grid_statement = replace(cst.Module(body=[plan.grid_statement]), {plan.grid: grid}).body[0]
            mapping = {
                plan.grid_statement: cst.FlattenSentinel(
                    [
                        setup[0].with_changes(leading_lines=plan.grid_statement.leading_lines),
                        setup[1],
                        new_grid_statement.with_changes(leading_lines=[]),
                    ]
                )
            }
            mapping[plan.site.call] = call
        else:
            mapping = {
                plan.site.statement: cst.FlattenSentinel(
                    [
                        setup[0].with_changes(leading_lines=plan.site.statement.leading_lines),
                        setup[1],
                        relaunch(plan.site, call, leading_lines=[]),
                    ]
                )
            }
        mapping[kernel.node] = new_kernel
        return replace(ctx.module, mapping).code


def _plan(ctx: RewriteContext, kernel: Kernel) -> IndexPlan | str | None:
    split = _split(kernel)
    if split is None:
        return None
    offs_stmt, row_stmt, col_stmt, cols = split
    offs = simple_assignment(offs_stmt)[0]
    value = simple_assignment(offs_stmt)[1]
    pids = program_id_names(kernel)
    aranges = calls(value, "arange")
    if len(aranges) != 1 or len(calls(kernel.node.body, "arange")) != 1:
        return "the offsets are not one tl.arange"
    block = dotted(aranges[0].args[1].value) if len(aranges[0].args) == 2 else None
    if block not in kernel.constexprs:
        return "the arange size is not a constexpr"
    shape_ok = any(same(value, f"{p} * {block} + tl.arange(0, {block})") for p in pids) or same(
        value, f"tl.program_id(0) * {block} + tl.arange(0, {block})"
    )
    if not shape_ok or (pids and list(pids.values()) != [0]) or len(calls(kernel.node.body, "program_id")) != 1:
        return "the offsets are not program_id(0) * BLOCK + tl.arange(0, BLOCK) with the only program id"
    if any(block in names(s) for s in kernel.statements if s is not offs_stmt):
        return f"{block} is used beyond the offsets line"
    if any(
        set(pids) & names(s) for s in kernel.statements if s is not offs_stmt and simple_assignment(s)[0] not in pids
    ):
        return "the program id is used beyond the offsets line"
    for node in walk(kernel.node.body):
        if isinstance(node, cst.Call) and tl_name(node.func) in REDUCTIONS:
            return f"tl.{tl_name(node.func)} is not elementwise"
    masks, rows = [], None
    for stmt in kernel.statements:
        if any(stmt is s for s in (offs_stmt, row_stmt, col_stmt)):
            continue
        for use in _offs_uses(stmt, offs):
            kind, node = use
            if kind == "mask":
                left, right = _product(node.comparisons[0].comparator)
                other = right if left == cols else left if right == cols else None
                if other is None or other not in kernel.params or (rows not in (None, other)):
                    return f"mask {code(node)} is not offs < R * {cols}"
                rows = other
                masks.append(node)
            elif kind == "other":
                return f"{code(node)} uses {offs} other than as an address or its bound"
    if rows is None:
        return f"no mask bounds {offs} by R * {cols}"
    sites = sites_of(ctx.module, kernel.name)
    if len(sites) != 1:
        return launched(sites) if sites else None
    site = sites[0]
    grid, grid_statement = resolve_grid(site)
    axes = grid_elements(grid)
    if axes is None or len(axes) != 1 or cdiv_parts(axes[0]) is None:
        return "the grid is not (triton.cdiv(n, BLOCK),)"
    if grid_shared(ctx.module, site):
        return "the grid variable serves other launches"
    for param in (rows, cols, block):
        if site.value(kernel, param) is None:
            return f"the launch does not pass {param}"
    if site.arg(kernel, block).keyword is None:
        return f"the launch does not pass {block} by keyword"
    return IndexPlan(kernel, site, offs_stmt, row_stmt, col_stmt, tuple(masks), rows, cols, block, grid, grid_statement)


def _split(kernel: Kernel):
    """(offsets, row, col statements, divisor) for `row = offs // C; col = offs % C`; a kernel that needs
    only one of them (`col = offs % C` to read a per-column bias) has None for the other."""
    by_name = {simple_assignment(s)[0]: s for s in kernel.statements if simple_assignment(s)[0]}

    def split(operator, offs, cols):
        return next(
            (
                s
                for s in kernel.statements
                if isinstance(simple_assignment(s)[1], cst.BinaryOperation)
                and isinstance(simple_assignment(s)[1].operator, operator)
                and same(simple_assignment(s)[1], f"{offs} {'//' if operator is cst.FloorDivide else '%'} {cols}")
            ),
            None,
        )

    for stmt in kernel.statements:
        target, value = simple_assignment(stmt)
        if (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, (cst.FloorDivide, cst.Modulo))
            and isinstance(value.left, cst.Name)
            and isinstance(value.right, cst.Name)
        ):
            offs, cols = value.left.value, value.right.value
            row_stmt, col_stmt = split(cst.FloorDivide, offs, cols), split(cst.Modulo, offs, cols)
            if offs in by_name and cols in kernel.params and cols not in kernel.constexprs:
                return by_name[offs], row_stmt, col_stmt, cols
    return None


def _offs_uses(stmt: cst.CSTNode, offs: str):
    """How `stmt` uses `offs`: ("mask", comparison) for `offs < X`, ("address", ...) inside a pointer
    argument, ("other", node) otherwise."""
    covered: set[int] = set()
    out = []
    for node in walk(stmt):
        if (
            isinstance(node, cst.Comparison)
            and isinstance(node.left, cst.Name)
            and node.left.value == offs
            and len(node.comparisons) == 1
            and isinstance(node.comparisons[0].operator, cst.LessThan)
        ):
            out.append(("mask", node))
            covered.add(id(node.left))
        if is_tl_call(node, "load", "store") and node.args:
            for n in walk(node.args[0].value):
                if isinstance(n, cst.Name) and n.value == offs:
                    covered.add(id(n))
                    out.append(("address", n))
    for node in walk(stmt):
        if isinstance(node, cst.Name) and node.value == offs and id(node) not in covered:
            out.append(("other", stmt))
            break
    return out


def _product(node: cst.BaseExpression) -> tuple[str | None, str | None]:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return dotted(node.left), dotted(node.right)
    return None, None
