"""rows-per-program: a kernel that handles one row per program handles ROWS rows, for short rows."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from diagnose import syntax
from diagnose.rewrite.edit import (
    early_returns_as_guards,
    fit_launch,
    replace,
    restarted_each_iteration,
    set_keyword,
    unique_name,
    with_params,
)
from diagnose.rewrite.reach import reached_kernels
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, grid_elements, grid_shared, launched, resolve_grid, sites_of
from diagnose.rewrite.source import (
    Kernel,
    axis_of,
    code,
    block_constexprs,
    coupled_by_axis,
    dotted,
    is_tl_call,
    kernels,
    names,
    positional,
    program_calls,
    program_id_call,
    program_id_names,
    simple_assignment,
    walk,
)
from diagnose.task.harness import replay_targets

ROWS = 4
WIDE = ("tl.int64", "triton.language.int64")


@dataclass(frozen=True)
class RowsPlan:
    kernel: Kernel
    site: LaunchSite
    row: str  # the name bound to tl.program_id(0)
    grid: cst.BaseExpression  # the grid tuple, where it is written
    grid_statement: cst.SimpleStatementLine | None
    rows: cst.BaseExpression  # its first axis: the number of rows
    widened: str | None = None  # `tl.int64` where the row is widened where it is bound
    program_id: str = "tl.program_id(0)"  # the call that reads it (a library's own helper, as written)
    other_axes: tuple[cst.BaseExpression, ...] = ()  # the grid's other axes, kept as written


class RowsPerProgram(Rewrite):
    """## What it changes
    A kernel launched on a 1-D grid of one program per row (`row = tl.program_id(0)`, grid `(n_rows,)`)
    handles `ROWS` consecutive rows per program: the statements after the row binding move into
    `for r in tl.static_range(ROWS): row = tl.program_id(0) * ROWS + r; if row < n_rows: ...`, the
    kernel gains the parameters `n_rows` and `ROWS: tl.constexpr`, and the launch passes
    `n_rows=<the grid's axis>`, `ROWS=4` on the grid `(triton.cdiv(<axis>, 4),)`.

    ## When it is valid
    Every row is still handled once by the same statements, so the values are the same; required: one
    launch, from any function of the module (a module-level `def op(x)`, an autograd
    `Function.forward`, `ModelNew.forward`, at any block depth), on a grid that is a literal tuple
    (written at the launch or bound once in that function, not shared with another launch),
    exactly one `tl.program_id(0)` in the kernel (other axes' ids with literal axes are read as they
    are), bound once at its top level (as it is, or
    widened where it is bound, as Liger-Kernel writes its rows: `program_id = tl.program_id(0).to(tl.int64)`,
    `tl.cast(tl.program_id(0), tl.int64)`; the new binding widens the same way) and not multiplied
    by a constexpr (a row, not a tile of a flattened range), no loop whose range is computed from it
    (a blocked or persistent kernel already handles a range of rows), no `tl.num_programs(0)`, no
    `return` other than the last statement of an `if` at the top level after the row binding (anywhere
    else it would end the rows after it), and not autotuned (a `triton.heuristics` whose keys are
    written out sets flags of its own, and is no matter).

    ## Why it is faster
    A short row (128 elements: one value per thread with 4 warps) makes a program that starts, loads
    a few hundred bytes and ends: millions of them are bound by block scheduling and launch overhead,
    not by memory (npukernel reduce_sum_dim 256x8192x128 fp16 ran at 0.21x of `torch.sum` on the
    H200). With ROWS rows per program the unrolled loop keeps several rows' loads in flight and
    divides the number of programs by ROWS.

    ## Safety
    Safe: each row is computed by the same statements as before.

    ## Answers
    PRF005 (launch- or scheduling-bound: more work per program), PRF003 (latency-bound: more
    independent work in flight).

    ## References
    Triton tutorial 02-fused-softmax (a program loops over several rows). Each thread holds
    `BLOCK / (32 * num_warps)` values of a 1-D block.
    """

    id = "rows-per-program"
    title = "Several rows per program for a kernel of one short row per program"
    codes = ("PRF005", "PRF003")
    conflicts = ("persistent-grid",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        known = kernels(ctx.module)
        # the kernels the task's call launches first: a forward and a backward both qualify, one is replayed
        order = reached_kernels(ctx.module, replay_targets(ctx.source))
        return Precondition.first_kernel(
            [known[k] for k in (known if order is None else order)],
            lambda k: _plan(ctx, k),
            RowsPlan,
            lambda p: f"one program per row of {code(p.rows)}",
            "no kernel launched on a 1-D grid of one program per row",
        )

    def transform(self, ctx: RewriteContext, plan: RowsPlan) -> str:
        kernel = plan.kernel
        taken = names(kernel.node) | set(kernel.params)
        n_rows, rows, step = unique_name(taken, "n_rows"), unique_name(taken, "ROWS"), unique_name(taken, "r")
        value = int(ctx.param("rows", ROWS))
        body = list(kernel.statements)
        at = next(i for i, stmt in enumerate(body) if simple_assignment(stmt)[0] == plan.row)
        before, after = body[:at], early_returns_as_guards(body[at + 1 :])
        saves, restores = restarted_each_iteration(after, kernel.params, taken | {n_rows, rows, step})
        first = f"{plan.program_id} * {rows} + {step}"
        binding = cst.parse_statement(f"{plan.row} = {f'({first}).to({plan.widened})' if plan.widened else first}\n")
        guarded = cst.If(test=cst.parse_expression(f"{plan.row} < {n_rows}"), body=cst.IndentedBlock(after))
        loop = cst.For(
            target=cst.Name(step),
            iter=cst.parse_expression(f"tl.static_range({rows})"),
            body=cst.IndentedBlock([*restores, binding, guarded]),
            leading_lines=[
                *body[at].leading_lines,
                cst.EmptyLine(
                    comment=cst.Comment(f"# {rows} rows per program: short rows made millions of tiny programs")
                ),
            ],
        )
        new_kernel = with_params(kernel.node, n_rows, f"{rows}: tl.constexpr").with_changes(
            body=kernel.node.body.with_changes(body=[*before, *saves, loop])
        )
        axes = [f"triton.cdiv({code(plan.rows)}, {value})", *map(code, plan.other_axes)]
        grid = cst.parse_expression(f"({', '.join(axes)}{',' if len(axes) == 1 else ''})")
        call = set_keyword(set_keyword(plan.site.call, n_rows, plan.rows), rows, cst.Integer(str(value)))
        mapping = {kernel.node: new_kernel}
        if plan.grid_statement is not None:
            mapping[plan.grid] = grid
        else:
            call = call.with_changes(func=call.func.with_changes(slice=[cst.SubscriptElement(cst.Index(grid))]))
        mapping[plan.site.call] = fit_launch(plan.site, call)
        return replace(ctx.module, mapping).code


def _plan(ctx: RewriteContext, kernel: Kernel) -> RowsPlan | str | None:
    sites = sites_of(ctx.module, kernel.name)
    if not sites:
        return None
    ids = program_id_names(kernel)  # `tl.program_id(0)`, or a library's helper for it (`tle.program_id(0)`)
    pids = {name: axis for name, axis in ids.items() if axis == 0}
    widened, program_id = None, "tl.program_id(0)"
    if pids:
        program_id = program_id_call(kernel, next(iter(pids)))  # the new binding calls the same
    else:
        pids, widened = _widened_row(kernel)
    axes_read = [axis_of(c) for c in program_calls(kernel.node.body, "program_id")]
    if axes_read.count(0) != 1 or None in axes_read or len(pids) != 1:
        return "its program id of axis 0 is not `row = tl.program_id(0)` at the kernel's top level, read once"
    (row,) = pids
    if kernel.decides(set()):  # heuristics that set flags of their own (unsloth's GEMMA) are no matter
        return "autotuned"
    if any(axis_of(c) in (0, None) for c in program_calls(kernel.node.body, "num_programs")):
        return "reads tl.num_programs(0)"
    if coupled_by_axis(kernel, {**ids, **pids}).get(0, set()) & block_constexprs(kernel):
        return f"{row} is multiplied by a block size: a program handles a tile, not a row"
    if _loops_from(kernel, row):
        # a persistent or blocked kernel (`for r in range(pid * rows_per_program, ...)`): fewer of
        # its programs would leave SMs idle, not save launches
        return f"a loop's range is computed from {row}: a program handles a range of rows already"
    stores = [
        n
        for n in ast.walk(syntax.parse(code(kernel.node)))
        if isinstance(n, ast.Name) and n.id == row and isinstance(n.ctx, ast.Store)
    ]
    if len(stores) != 1:
        return f"{row} is bound more than once"
    at = next(i for i, stmt in enumerate(kernel.statements) if simple_assignment(stmt)[0] == row)
    if any(isinstance(node, cst.Return) for stmt in kernel.statements[: at + 1] for node in walk(stmt)):
        return "returns before its row is bound"
    if isinstance(why := early_returns_as_guards(list(kernel.statements[at + 1 :])), str):
        return why
    if len(sites) != 1:
        return launched(sites)
    site = sites[0]
    grid, grid_statement = resolve_grid(site)
    axes = grid_elements(grid)
    if not axes:
        return "the grid is not a literal tuple"
    if grid_shared(ctx.module, site):
        return "the grid variable serves other launches"
    return RowsPlan(kernel, site, row, grid, grid_statement, axes[0], widened, program_id, tuple(axes[1:]))


def _loops_from(kernel: Kernel, row: str) -> bool:
    """Whether a `for` loop's range reads `row` or a name the kernel's top level derives from it."""
    derived = {row}
    for stmt in kernel.statements:
        target, value = simple_assignment(stmt)
        if target and value is not None and names(value) & derived:
            derived.add(target)
    return any(isinstance(node, cst.For) and names(node.iter) & derived for node in walk(kernel.node.body))


def _widened_row(kernel: Kernel) -> tuple[dict[str, int], str | None]:
    """`{row: 0}` and the dtype where the kernel binds its row widened at its top level:
    `row = tl.program_id(0).to(tl.int64)` or `row = tl.cast(tl.program_id(0), tl.int64)`."""
    for stmt in kernel.statements:
        target, value = simple_assignment(stmt)
        if not target or not isinstance(value, cst.Call):
            continue
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "to" and len(value.args) == 1:
            inner, dtype = value.func.value, value.args[0].value
        elif is_tl_call(value, "cast") and len(positional(value)) == 2:
            inner, dtype = positional(value)[0].value, positional(value)[1].value
        else:
            continue
        if dotted(dtype) in WIDE and is_tl_call(inner, "program_id") and axis_of(inner) == 0:
            return {target: 0}, dotted(dtype)
    return {}, None
