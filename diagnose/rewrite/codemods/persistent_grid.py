"""persistent-grid: one program per SM (Ascend: per core) looping over the blocks, grid-stride."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.cores import core_count_helper
from diagnose.rewrite.edit import (
    early_returns_as_guards,
    insert_before_host,
    replace,
    restarted_each_iteration,
    statement,
)
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
    Kernel,
    calls,
    code,
    coupled_by_axis,
    kernels,
    module_names,
    names,
    pointer_params,
    program_calls,
    program_id_call,
    program_id_names,
    same,
    simple_assignment,
    walk,
)


@dataclass(frozen=True)
class PersistentPlan:
    kernel: Kernel
    site: LaunchSite
    pid: cst.SimpleStatementLine
    blocks: tuple[str, str]  # (extent param, block constexpr): the kernel counts its blocks
    grid: cst.BaseExpression
    grid_statement: cst.SimpleStatementLine | None
    device_of: str


class PersistentGrid(Rewrite):
    """## What it changes
    A kernel launched on a 1-D grid of `triton.cdiv(n, BLOCK)` programs, each taking its block from
    `pid = tl.program_id(0)`, becomes persistent: the statements after that line move into
    `for pid in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):` and the grid
    becomes `(min(triton.cdiv(n, BLOCK), cores),)`, with `cores` the SM count on CUDA and the vector
    (or, for `tl.dot` kernels, AI) core count on Ascend, asked from the device by a helper added
    before the launching function (or its class: `ModelNew`, an autograd `Function`; on CPU: the
    target's count).

    ## When it is valid
    Every block index in `[0, cdiv(n, BLOCK))` is still visited exactly once (program p takes p,
    p + P, p + 2P, ...), and the body for one block is unchanged; required: the program id is bound
    once at the kernel's top level and nothing else reads `tl.program_id`/`tl.num_programs`; a
    `return` only as the last statement of an `if` at the top level after it (`if pid * BLOCK >= n:
    return`), which becomes a guard around the rest of the block's statements; the grid's extent and block are passed to the kernel as arguments; the
    block's results do not depend on which program computes it (no atomics on per-program slots).
    The launch may sit in any function of the module, at any block depth.

    ## Why it is faster
    On Ascend, grid blocks bind to physical cores: a grid larger than the core count runs in rounds,
    each paying launch and initialisation, and a grid over 65535 does not launch at all.
    On GPUs it removes the tail of a multi-wave grid and the per-program setup.

    ## Safety
    Safe: each block computes what it computed.

    ## Answers
    ASC001 (grid-over-65535), ASC002 (grid-exceeds-core-count), TRI020 (grid-axis-over-limit).

    ## References
    triton-ascend programming guide, "Setting the Maximum Number of Hardware Cores"; triton-ascend
    `driver.py` (`coreDim` at most UINT16_MAX); Triton tutorial 09-persistent-matmul.
    """

    id = "persistent-grid"
    title = "Persistent kernel: grid = core count, a grid-stride loop over the blocks"
    codes = ("ASC001", "ASC002", "TRI020")
    evidence = ("LaunchGrid",)  # Ascend: more programs than cores (extra rounds) or over the limit

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            PersistentPlan,
            lambda p: f"one program per block of {p.blocks[0]}",
            "no kernel on a 1-D cdiv grid of program ids",
        )

    def transform(self, ctx: RewriteContext, plan: PersistentPlan) -> str:
        kernel = plan.kernel
        pid_name, _ = simple_assignment(plan.pid)
        extent, block = plan.blocks
        index = kernel.statements.index(plan.pid)
        body = early_returns_as_guards(list(kernel.statements[index + 1 :]))
        saves, restores = restarted_each_iteration(body, kernel.params, names(kernel.node) | set(kernel.params))
        first = program_id_call(kernel, pid_name)  # as the kernel reads it: a library's int64 id stays int64
        loop = statement(
            f"for {pid_name} in range({first}, tl.cdiv({extent}, {block}), tl.num_programs(0)):\n    pass\n"
        )
        loop = loop.with_changes(
            body=loop.body.with_changes(body=[*restores, *body]),
            leading_lines=[
                *plan.pid.leading_lines,
                cst.EmptyLine(
                    comment=cst.Comment("# persistent: each program strides over the blocks, one program per core")
                ),
            ],
        )
        new_kernel = kernel.node.with_changes(
            body=kernel.node.body.with_changes(body=[*kernel.statements[:index], *saves, loop])
        )
        helper, definition = core_count_helper(ctx, dot=bool(calls(kernel.node.body, "dot")))
        grid_axis = code(grid_elements(plan.grid)[0])
        flat = cst.parse_expression(f"(min({grid_axis}, {helper}({plan.device_of}.device)),)")
        mapping = {kernel.node: new_kernel}
        if plan.grid_statement is not None:
            mapping[plan.grid] = flat
        else:
            call = plan.site.call
            mapping[call] = call.with_changes(
                func=call.func.with_changes(slice=[cst.SubscriptElement(cst.Index(flat))])
            )
        # placed first, on the module the site was read from (the anchor is found by identity)
        return replace(insert_before_host(ctx.module, plan.site, definition), mapping).code


def _plan(ctx: RewriteContext, kernel: Kernel) -> PersistentPlan | str | None:
    pids = program_id_names(kernel)
    if list(pids.values()) != [0]:
        return None
    if len(program_calls(kernel.node.body, "program_id")) != 1 or program_calls(kernel.node.body, "num_programs"):
        return "reads tl.program_id / tl.num_programs more than once"
    if kernel.autotuned:
        return "autotuned"
    pid = next(s for s in kernel.statements if simple_assignment(s)[0] in pids)
    at = kernel.statements.index(pid)
    if any(isinstance(n, cst.Return) for s in kernel.statements[: at + 1] for n in walk(s)):
        return "returns before its program id is bound"
    if isinstance(why := early_returns_as_guards(list(kernel.statements[at + 1 :])), str):
        return why
    sites = sites_of(ctx.module, kernel.name)
    if len(sites) != 1:
        return launched(sites) if sites else None
    site = sites[0]
    grid, grid_statement = resolve_grid(site)
    axes = grid_elements(grid)
    if axes is None or len(axes) != 1:
        return "the grid is not a 1-element tuple"
    if grid_shared(ctx.module, site):
        return "the grid variable serves other launches"
    parts = cdiv_parts(axes[0])
    if parts is None:
        return f"grid axis {code(axes[0])} is not triton.cdiv(extent, block)"
    coupled = coupled_by_axis(kernel).get(0, set())
    passed = []
    for i, part in enumerate(parts):
        matches = [p for p in kernel.params if site.value(kernel, p) is not None and same(site.value(kernel, p), part)]
        preferred = [p for p in matches if p in coupled] if i == 1 else []
        passed.append((preferred or matches or [None])[0])
    if None in passed or passed[1] not in kernel.constexprs:
        return "the grid's extent and block are not both kernel arguments"
    pointers = [site.value(kernel, p) for p in pointer_params(kernel)]
    device_of = next((v.value for v in pointers if isinstance(v, cst.Name)), None)
    if device_of is None:
        return "no tensor argument to ask the device from"
    if "torch" not in module_names(ctx.module):  # last: a kernel that qualifies otherwise is told so
        return "the module does not import torch (the core count helper needs it)"
    return PersistentPlan(kernel, site, pid, (passed[0], passed[1]), grid, grid_statement, device_of)
