"""row-program-order: launch order that runs the programs of one gathered row together, for L2 reuse."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.dependence import dependence, reads
from diagnose.rewrite.edit import replace, statements, unique_name
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import Kernel, axis_of, calls, code, keyword, kernels, load_derived, names


# Stand-ins for "reads tl.program_id(0)" / "(1)" in `dependence`; not valid identifiers, so no name clashes.
ROW, COL = "<program_id(0)>", "<program_id(1)>"


@dataclass(frozen=True)
class OrderPlan:
    kernel: Kernel
    gather: str  # the pointer of the gathering access, for the reason


class RowProgramOrder(Rewrite):
    """## What it changes
    A kernel on a 2-D grid whose first program id picks a row that an indirect access gathers from
    (`vals = tl.load(x_ptr + row * N + idx)` with `idx` loaded, `row = tl.program_id(0)`) gets its two
    program ids computed from the launch order instead: with `lin` the linear program index (axis 0
    fastest, as the GPU starts them), `pid_0 = lin // tl.num_programs(1)` and
    `pid_1 = lin % tl.num_programs(1)`, bound at the kernel's top and read wherever
    `tl.program_id(0)` / `tl.program_id(1)` were, so the programs of one row start one after another.
    The launch, the grid and the rest of the kernel stay as they are.

    ## When it is valid
    Always, as to what is computed: the mapping is a bijection of the grid onto itself, whatever its
    shape, so every (row, col) program still runs once. Required for it to apply: the kernel reads
    `tl.program_id` of axes 0 and 1 only (with literal axes) and no `tl.num_programs`, and a load
    whose pointer reads a loaded value and, besides, what depends on the first program id and nothing
    that depends on the second (the row is the same for every program along axis 1).

    ## Why it is faster
    The grid `(rows, cdiv(K, BLOCK))` starts programs row by row of axis 0 first: the programs that
    gather from one row of `x` start `rows` programs apart, so each of them reads its scattered
    elements from DRAM, one 32-byte sector per 4-byte element. In row order the few programs of a
    row run together and the row (N elements, tens of KiB) is read from DRAM once and served from L2
    to the others: up to 8x fewer DRAM bytes for fp32 gathers of a row read several times.

    ## Safety
    Safe: the same programs with the same arithmetic, started in another order (atomics, if any, add
    in another order).

    ## Answers
    PRF101 (uncoalesced global accesses: a gather's scattered sectors), PRF001 (memory-bound short of
    the roof: index_gather on the H200 at 27% of its roofline, 0.48x of `torch.gather`).

    ## References
    Triton tutorial 03-matrix-multiplication ("L2 cache optimizations": program order decides reuse);
    CUDA programming guide, thread block scheduling order (blockIdx.x fastest).
    """

    id = "row-program-order"
    title = "Row-major program order so a gathered row is reused from L2"
    codes = ("PRF101", "PRF001")
    conflicts = ("group-m-swizzle",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            _plan,
            OrderPlan,
            lambda p: f"every program of axis 1 gathers from the row that program_id(0) picks ({p.gather})",
            "no kernel on a 2-D grid of program ids",
        )

    def transform(self, ctx: RewriteContext, plan: OrderPlan) -> str:
        kernel = plan.kernel
        taken = names(kernel.node) | set(kernel.params)
        lin, pid_0, pid_1 = (unique_name(taken, n) for n in ("lin", "pid_0", "pid_1"))
        order = statements(f"""
            {lin} = tl.program_id(1).to(tl.int64) * tl.num_programs(0) + tl.program_id(0)
            {pid_0} = ({lin} // tl.num_programs(1)).to(tl.int32)
            {pid_1} = ({lin} % tl.num_programs(1)).to(tl.int32)
            """)
        comment = cst.EmptyLine(
            comment=cst.Comment(
                "# row order: the programs that gather from one row run together, so the row stays in L2"
            )
        )
        pids = {
            call: cst.Name(pid_0 if axis_of(call) == 0 else pid_1) for call in calls(kernel.node.body, "program_id")
        }
        body = replace(cst.Module(list(kernel.statements)), pids).body
        first = body[0]
        docstring = bool(
            isinstance(first, cst.SimpleStatementLine)
            and isinstance(first.body[0], cst.Expr)
            and isinstance(first.body[0].value, cst.SimpleString)
        )
        head, rest = (list(body[:1]), list(body[1:])) if docstring else ([], list(body))
        lead = rest[0].leading_lines if rest else ()
        if rest:
            rest[0] = rest[0].with_changes(leading_lines=())
        new_body = [*head, order[0].with_changes(leading_lines=[*lead, comment]), *order[1:], *rest]
        new_kernel = kernel.node.with_changes(body=kernel.node.body.with_changes(body=new_body))
        return replace(ctx.module, {kernel.node: new_kernel}).code


def _plan(kernel: Kernel) -> OrderPlan | str | None:
    axes = [axis_of(c) for c in calls(kernel.node.body, "program_id")]
    if not {0, 1} <= set(axes):
        return None
    if set(axes) != {0, 1} or calls(kernel.node.body, "num_programs"):
        return "reads tl.num_programs or a program id beyond axes 0 and 1"
    on_row = {ROW} | dependence(kernel.node, ROW, frozenset({0})).names
    on_col = {COL} | dependence(kernel.node, COL, frozenset({1})).names
    loaded = load_derived(kernel)
    for call in calls(kernel.node.body, "load"):
        pointer = keyword(call, "pointer") or (call.args[0] if call.args else None)
        if pointer is None:
            continue
        read = names(pointer.value)
        # what the address is made of besides the gathered offsets
        rest = (reads(pointer.value, ROW, frozenset({0})) | reads(pointer.value, COL, frozenset({1}))) - loaded
        if read & loaded and rest & on_row and not rest & on_col:
            return OrderPlan(kernel, code(pointer.value))
    return "no load gathers (an address from loaded values) from a row chosen by program_id(0) alone"
