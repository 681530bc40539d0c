"""single-pass-row: a multi-pass row kernel becomes one pass when the row fits one block."""

from __future__ import annotations

from dataclasses import dataclass
import libcst as cst

from diagnose.rewrite.edit import (
    INDENT,
    fit_launch,
    insert_after,
    relaunch,
    rename_call,
    rename_function,
    replace,
    set_keyword,
    statement,
    unique_name,
    with_comment,
)
from diagnose.rewrite.passes import drop_repeated_assignments, share_loads
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, launched, sites_of
from diagnose.rewrite.source import (
    loop_body,
    Kernel,
    assigned_names,
    code,
    grid_coupled,
    int_value,
    kernels,
    module_names,
    names,
    walk,
)

# fp32 rows up to 64 KB: 16 warps then hold 32 values per thread and tile, well inside the registers.
MAX_COLS = 16384
# Liger-Kernel's `calculate_settings` (tuned on H100): warps by block size.
WARPS = "4 if {block} < 2048 else 8 if {block} < 8192 else 16"
SIMPLE_HOST = (cst.Name, cst.Attribute, cst.Subscript, cst.Integer)
TWIN = "_single_block"


@dataclass(frozen=True)
class RowPlan:
    kernel: Kernel
    site: LaunchSite
    bound: str
    block: str
    loops: tuple[cst.For, ...]


class SinglePassRow(Rewrite):
    """## What it changes
    A kernel that walks a row in two or more sibling loops `for start in range(0, n_cols, BLOCK)`
    (softmax: max, sum, normalize; layer norm: mean, variance, normalize; RMS norm: sum of squares,
    normalize) gets a single-block twin: each loop is replaced by its body with `start = 0`, repeated
    assignments are dropped and the row is loaded once into a variable every pass reads. The launch
    becomes `if 0 < n_cols <= 16384:` the twin with `BLOCK = triton.next_power_of_2(n_cols)` (and
    num_warps by block size), `else:` the original multi-pass kernel, unchanged, for longer rows.

    ## When it is valid
    With `BLOCK >= n_cols` each loop runs exactly once with `start = 0`, so the unrolled body computes
    what the loop computed. Required: the loops share the bound (a kernel argument) and the step (a
    constexpr), start at 0, contain no `break`/`continue`/`return` and do not assign their variable;
    the kernel is not autotuned; it is launched once, from any function of the module (a module-level
    `def op(x)`, an autograd `Function.forward`, `ModelNew.forward`, at any block depth), with the
    step passed by keyword and the bound passed as a plain expression, and `num_warps` passed by
    keyword or not at all (not through a `**kwargs` that may hold it); the step is not multiplied by a
    program id (the grid does not depend on it). Loads are shared only when no store or atomic runs between them.

    ## Why it is faster
    A memory-bound row kernel moves its row from HBM once instead of once per pass (2-3x fewer bytes),
    and one block per row with `next_power_of_2(n_cols)` lanes replaces the loop overhead.

    ## Safety
    Safe: the same arithmetic; only the reduction tree changes with the block size (float
    reassociation).

    ## Answers
    TRI007 (multi-pass-row-reload); ASC014 when the per-iteration reductions are the passes.

    ## References
    Triton tutorial 02-fused-softmax; Liger-Kernel `calculate_settings`. On Ascend too, multi-pass
    algorithms (softmax max, sum, normalize) are best fused when the row fits a block.
    """

    id = "single-pass-row"
    title = "Keep the row in registers: one block per row when it fits, the multi-pass kernel otherwise"
    codes = ("TRI007", "ASC014")

    def precondition(self, ctx: RewriteContext) -> Precondition:
        found = Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            RowPlan,
            lambda p: f"{len(p.loops)} passes over range(0, {p.bound}, {p.block})",
            "no kernel loops twice over the same row range",
        )
        # After the kernels are read: a module with no two-pass kernel is told that, not this.
        if found.holds and "triton" not in module_names(ctx.module):
            return Precondition.no("the module does not import triton (needed for next_power_of_2)")
        return found

    def transform(self, ctx: RewriteContext, plan: RowPlan) -> str:
        module = ctx.module
        taken = module_names(module)
        name = unique_name(taken, f"{plan.kernel.name}{TWIN}")
        twin = single_block_twin(plan, name, taken)
        module = insert_after(module, plan.kernel.node, [twin])
        site = sites_of(module, plan.kernel.name)[0]
        module = replace(module, {site.statement: self.host_switch(ctx, module, site, plan, name)})
        return module.code

    def host_switch(
        self, ctx: RewriteContext, module: cst.Module, site: LaunchSite, plan: RowPlan, twin: str
    ) -> cst.If:
        kernel = kernels(module)[plan.kernel.name]
        bound = code(site.value(kernel, plan.bound))
        taken = names(site.host)
        block = unique_name(taken, "ROW_BLOCK")
        warps = unique_name(taken, "ROW_WARPS")
        limit = int(ctx.param("max_cols", MAX_COLS))
        call = rename_call(site.call, twin)
        call = set_keyword(call, plan.block, cst.Name(block))
        call = fit_launch(site, set_keyword(call, "num_warps", cst.Name(warps)), deeper=INDENT)
        fused = relaunch(site, call, leading_lines=[])
        switch = statement(f"""
            if 0 < {bound} <= {limit}:
                {block} = triton.next_power_of_2({bound})
                {warps} = {WARPS.format(block=block)}
                pass
            else:
                pass
            """)
        switch = switch.with_changes(
            body=switch.body.with_changes(body=[*switch.body.body[:2], fused]),
            orelse=switch.orelse.with_changes(
                body=switch.orelse.body.with_changes(body=[site.statement.with_changes(leading_lines=[])])
            ),
            leading_lines=site.statement.leading_lines,
        )
        return with_comment(
            switch, "the row fits one block: one pass over memory; longer rows keep the multi-pass kernel"
        )


def _plan(ctx: RewriteContext, kernel: Kernel) -> RowPlan | str | None:
    groups: dict[tuple[str, str], list[cst.For]] = {}
    for stmt in kernel.statements:
        loop = _row_loop(stmt, kernel)
        if loop is not None:
            groups.setdefault(loop, []).append(stmt)
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    if not groups:
        return None
    (bound, block), loops = max(groups.items(), key=lambda kv: len(kv[1]))
    if kernel.autotuned:
        return "autotuned: the block size is the autotuner's"
    if f"{kernel.name}{TWIN}" in kernels(ctx.module):
        return f"already has a single-block twin ({kernel.name}{TWIN})"
    for loop in loops:
        if any(isinstance(n, (cst.Break, cst.Continue, cst.Return)) for n in walk(loop.body)):
            return f"a pass over `{code(loop.target)}` has break/continue/return"
        if loop.orelse is not None:
            return "a pass has an else branch"
        if loop.target.value in assigned_names(loop.body):
            return f"a pass assigns its loop variable {loop.target.value}"
    if block in grid_coupled(kernel):
        return f"{block} multiplies a program id: the grid depends on it"
    sites = sites_of(ctx.module, kernel.name)
    if len(sites) != 1:
        return f"{launched(sites)}: one launch needed"
    site = sites[0]
    if site.arg(kernel, block) is None or site.arg(kernel, block).keyword is None:
        return f"the launch does not pass {block} by keyword"
    if site.arg(kernel, "num_warps") is None and site.passes_unpacked("num_warps"):
        return f"the launch's **kwargs may set num_warps (in {site.host_name})"
    value = site.value(kernel, bound)
    if value is None or not _side_effect_free(value):
        return f"the launch's {bound} is not a plain host expression"
    return RowPlan(kernel, site, bound, block, tuple(loops))


def _row_loop(stmt: cst.BaseStatement, kernel: Kernel) -> tuple[str, str] | None:
    """(bound, step) for `for v in range(0, bound, STEP)` with a kernel argument bound and a constexpr step."""
    if not isinstance(stmt, cst.For) or not isinstance(stmt.target, cst.Name):
        return None
    it = stmt.iter
    if not (
        isinstance(it, cst.Call)
        and isinstance(it.func, cst.Name)
        and it.func.value in ("range", "tl.range")
        and len(it.args) == 3
        and all(a.keyword is None for a in it.args)
    ):
        return None
    start, bound, step = (a.value for a in it.args)
    if int_value(start) != 0 or not isinstance(bound, cst.Name) or not isinstance(step, cst.Name):
        return None
    if bound.value not in kernel.params or bound.value in kernel.constexprs or step.value not in kernel.constexprs:
        return None
    return bound.value, step.value


def _side_effect_free(node: cst.BaseExpression) -> bool:
    if isinstance(node, SIMPLE_HOST):
        return True
    # x.shape[1], x.size(1), x.numel()
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("size", "numel", "stride", "dim")
    )


def single_block_twin(plan: RowPlan, name: str, taken: set[str]) -> cst.FunctionDef:
    """The kernel with every pass unrolled once (`start = 0`) and the repeated work removed."""
    body: list[cst.BaseStatement] = []
    for stmt in plan.kernel.statements:
        if stmt in plan.loops:
            body.append(statement(f"{stmt.target.value} = 0").with_changes(leading_lines=stmt.leading_lines))
            body += loop_body(stmt)
        else:
            body.append(stmt)
    body = drop_repeated_assignments(body)
    body = share_loads(body, taken | set(plan.kernel.params))
    body = drop_repeated_assignments(body)
    node = plan.kernel.node
    note = cst.EmptyLine(
        comment=cst.Comment(
            f"# {plan.kernel.name} with {plan.block} >= {plan.bound}: every pass runs once, the row is loaded once."
        )
    )
    return rename_function(node, name).with_changes(body=node.body.with_changes(body=body), leading_lines=[note])
