"""two-level-tiling: a block processed in BLOCK_SUB chunks, so its tiles fit Ascend's unified buffer."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import fit_launch, replace, set_keyword, statement, unique_name, with_params
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, launched, sites_of
from diagnose.rewrite.source import (
    REDUCTIONS,
    Kernel,
    calls,
    code,
    dotted,
    int_value,
    kernels,
    names,
    simple_assignment,
    tl_name,
    walk,
)

# Per-core sub-block (fp32 elements) that leaves room for double buffering of a few live tiles in
# the 192 KB unified buffer of a 910B vector core (the GELU example of triton-ascend
# `docs/en/migration_guide/architecture_difference.md` uses 8192).
SUB = 8192


@dataclass(frozen=True)
class TilingPlan:
    kernel: Kernel
    site: LaunchSite
    block: str
    offsets: cst.SimpleStatementLine
    arange: cst.Call


class TwoLevelTiling(Rewrite):
    """## What it changes
    An elementwise kernel whose program handles one block `offs = pid * BLOCK + tl.arange(0, BLOCK)`
    gets a second tiling level: a `BLOCK_SUB: tl.constexpr` parameter, and the statements from the
    offsets line to the end run in `for sub in range(0, BLOCK, BLOCK_SUB):` with
    `tl.arange(0, BLOCK)` replaced by `sub + tl.arange(0, BLOCK_SUB)`. The launch passes
    `BLOCK_SUB=min(BLOCK, 8192)`.

    ## When it is valid
    The sub-blocks partition the block (both are powers of two, `BLOCK_SUB <= BLOCK`), and every
    lane's value depends only on its own offset, so processing them in chunks computes the same
    thing; required: exactly one `tl.arange(0, BLOCK)`, in the offsets line, no other use of BLOCK
    after it, and no reduction, scan, dot or shape operation in the kernel (elementwise only); one
    launch, from any function of the module, passing BLOCK by keyword.

    ## Why it is faster
    Ascend holds a program's tiles in the unified buffer (192 KB on 910B): a block too large
    overflows it (`ub overflow` at compile time) or leaves no room for the double buffering that
    overlaps DMA with compute; a loop over sub-blocks bounds the live tiles and gives the compiler
    iterations to pipeline. Combined with a persistent grid, BLOCK becomes the per-core
    chunk and BLOCK_SUB the in-core step.

    ## Safety
    Safe: the same values per element.

    ## Answers
    ASC003 (ub-overflow), ASC013 (single-pass-without-multibuffer).

    ## References
    triton-ascend programming guide, "Tiling Optimization"; triton-ascend performance guidelines,
    "Instruction Parallelism".
    """

    id = "two-level-tiling"
    title = "Two-level tiling (BLOCK per program, BLOCK_SUB per step) for the unified buffer"
    codes = ("ASC003", "ASC013")
    evidence = ("UBFootprint",)  # Ascend: the block's estimated UB footprint passes the UB size
    backends = ("npu",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            TilingPlan,
            lambda p: f"elementwise over one block of {p.block}",
            "no elementwise kernel over one block per program",
        )

    def transform(self, ctx: RewriteContext, plan: TilingPlan) -> str:
        kernel = plan.kernel
        taken = names(kernel.node) | set(kernel.params)
        sub_block = unique_name(taken, f"{plan.block}_SUB")
        sub = unique_name(taken, "sub")
        index = kernel.statements.index(plan.offsets)
        chunk = cst.parse_expression(f"{sub} + tl.arange(0, {sub_block})")
        rest = [replace(cst.Module(body=[s]), {plan.arange: chunk}).body[0] for s in kernel.statements[index:]]
        loop = statement(f"for {sub} in range(0, {plan.block}, {sub_block}):\n    pass\n")
        loop = loop.with_changes(
            body=loop.body.with_changes(body=[rest[0].with_changes(leading_lines=[]), *rest[1:]]),
            leading_lines=[
                *plan.offsets.leading_lines,
                cst.EmptyLine(
                    comment=cst.Comment(f"# {sub_block} lanes at a time: the live tiles fit the unified buffer")
                ),
            ],
        )
        new_kernel = with_params(kernel.node, f"{sub_block}: tl.constexpr").with_changes(
            body=kernel.node.body.with_changes(body=[*kernel.statements[:index], loop])
        )
        block_value = code(plan.site.value(kernel, plan.block))
        sub_value = int(ctx.param("block_sub", SUB))
        call = fit_launch(
            plan.site, set_keyword(plan.site.call, sub_block, cst.parse_expression(f"min({block_value}, {sub_value})"))
        )
        return replace(ctx.module, {kernel.node: new_kernel, plan.site.call: call}).code


def _plan(ctx: RewriteContext, kernel: Kernel) -> TilingPlan | str | None:
    aranges = calls(kernel.node.body, "arange")
    if len(aranges) != 1:
        return None
    arange = aranges[0]
    block = dotted(arange.args[1].value) if len(arange.args) == 2 else None
    if block not in kernel.constexprs or int_value(arange.args[0].value) != 0:
        return None
    offsets = next((s for s in kernel.statements if any(n is arange for n in walk(s))), None)
    if offsets is None or simple_assignment(offsets)[0] is None:
        return "the tl.arange is not in a top-level offsets assignment"
    index = kernel.statements.index(offsets)
    later = kernel.statements[index + 1 :]
    if any(block in names(s) for s in later):
        return f"{block} is used after the offsets line"
    for node in walk(kernel.node.body):
        if isinstance(node, cst.Call) and tl_name(node.func) in REDUCTIONS:
            return f"tl.{tl_name(node.func)} is not elementwise"
        if isinstance(node, cst.Return):
            return "returns early"
    if kernel.autotuned:
        return "autotuned"
    sites = sites_of(ctx.module, kernel.name)
    if len(sites) != 1:
        return launched(sites) if sites else None
    arg = sites[0].arg(kernel, block)
    if arg is None or arg.keyword is None:
        return f"the launch does not pass {block} by keyword"
    return TilingPlan(kernel, sites[0], block, offsets, arange)
