"""split-k: a matmul whose grid of output tiles is too small for the device splits its K loop."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.cores import core_count_helper
from diagnose.rewrite.edit import (
    expression,
    fit_call,
    fit_launch,
    insert_before_host,
    operand,
    relaunch,
    replace,
    set_keyword,
    statement,
    statements,
    unique_name,
    with_params,
)
from diagnose.rewrite.matmul import DotTiles, dot_tiles
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import (
    LaunchSite,
    bound_before,
    grid_elements,
    grid_shared,
    launched,
    resolve_grid,
    sites_of,
)
from diagnose.rewrite.source import (
    Kernel,
    assigned_names,
    axis_of,
    calls,
    code,
    dotted,
    is_tl_call,
    kernels,
    loop_body,
    module_names,
    names,
    pointer_params,
    positional,
    program_id_names,
    read_names,
    simple_assignment,
    walk,
)

# Each program keeps at least this many K steps: fewer and the fp32 atomics and the pipeline's
# prologue cost more than the parallelism gains.
MIN_STEPS = 4
# Programs wanted per SM in all (two waves hide the tail of uneven K shares).
PER_SM = 2


@dataclass(frozen=True)
class SplitPlan:
    kernel: Kernel
    site: LaunchSite
    tiles: DotTiles
    loop: cst.For
    accumulator: str
    inductions: tuple[cst.SimpleStatementLine, ...]  # `p += step` lines of the loop (pointers, offsets)
    store: cst.Call
    cast: cst.SimpleStatementLine | None  # `c = acc.to(...)`, read only by the store
    axis: int  # the new grid axis
    grid: cst.BaseExpression
    grid_statement: cst.SimpleStatementLine | None
    output: str  # the host tensor the kernel stores into
    k_steps: str  # host expression: the loop's trip count


class SplitK(Rewrite):
    """## What it changes
    A `tl.dot` kernel whose programs each own one output tile and walk the whole K range gets a new
    grid axis of `split_k` programs per tile: program `pid_k` takes K steps `pid_k, pid_k + split_k,
    ...` (the loop's start and step are scaled, and each pointer or offset advanced in the loop
    starts `pid_k` steps ahead and advances `split_k` steps at a time), and its final
    `tl.store(c, acc)` becomes `tl.atomic_add` of the fp32 partial tile into an fp32 buffer the
    host zeroes; the host copies that buffer into the output after the launch. `split_k` is computed
    at run time from the tile count, the device's SM count (a helper asks the device) and the K
    steps: enough programs for two per SM, each over at least four K steps.

    ## When it is valid
    The loop's iterations are independent but for the accumulator: every other name the loop binds
    is bound before it is read in the same iteration, or is advanced once per iteration by a
    loop-invariant step (`a_ptrs += BLOCK_K * stride_ak`), and none is read after the loop; the
    accumulator is read after the loop only by the one store of the kernel, as `acc` or
    `acc.to(...)` (an epilogue such as a bias or an activation would be applied to every partial
    sum: not linear, not split). The grid is a literal tuple of one or two axes, the kernel reads no
    other program id and no `tl.num_programs`, is launched once, not autotuned, and stores through a
    pointer the launch passes as a host tensor variable. The launch may sit in any function of the
    module (a module-level `def matmul(a, b)`, an autograd `Function.forward`, `ModelNew.forward`), at
    any block depth; what sizes the split (the grid's axes, the K extent, the output) is bound in that
    function before the grid, and no loop runs the launch without the grid's line (the buffer would
    add up across iterations).

    ## Why it is faster
    With small M and N and a long K (tall-K products, weight gradients) a grid of output tiles
    leaves most SMs idle: 16 tiles of 128x128 on a 132-SM H200 use an eighth of the device however
    fast each tile runs (the profile level's PRF004: too few programs for the device). Split K
    programs fill every SM; the extra cost is one fp32 read-modify-write of C per split.

    ## Safety
    Safe: the same products accumulated in fp32, in another order (partial sums added by atomics, so
    the order may differ between runs).

    ## Answers
    PRF004 (tail-bound: too few programs for the device).

    ## References
    CUTLASS split-K (`GemmSplitKParallel`, serial split-K with semaphores); Triton's
    `python/tutorials/03-matrix-multiplication.py` for the kernel form; NPUKernelBench
    level3 SplitkMatmul.
    """

    id = "split-k"
    title = "Split the K loop across programs, partial tiles added in fp32"
    codes = ("PRF004",)
    backends = ("cuda", "hip")

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            SplitPlan,
            lambda p: f"one {p.tiles.m}x{p.tiles.n} tile per program over the whole K loop",
            "no launched kernel with a tl.dot K loop",
        )

    def transform(self, ctx: RewriteContext, plan: SplitPlan) -> str:
        taken = names(plan.kernel.node) | set(plan.kernel.params)
        split = unique_name(taken, "split_k")
        mapping, helper = _host_edits(ctx, plan, split)
        mapping[plan.kernel.node] = _split_kernel(plan, unique_name(taken, "pid_k"), split)
        # placed first, on the module the site was read from (the anchor is found by identity)
        return replace(insert_before_host(ctx.module, plan.site, helper), mapping).code


def _split_kernel(plan: SplitPlan, pid_k: str, split: str) -> cst.FunctionDef:
    """The kernel over one share of K: the new program id, the split loop, the atomic store, `split`."""
    kernel = plan.kernel
    body = [_scaled(s, split) if s in plan.inductions else s for s in loop_body(plan.loop)]
    loop = plan.loop.with_changes(
        iter=_split_range(plan.loop.iter, pid_k, split), body=plan.loop.body.with_changes(body=body)
    )
    ahead = [statement(f"{_induction(s)[0]} += ({code(_induction(s)[1])}) * {pid_k}") for s in plan.inductions]
    first = statement(f"{pid_k} = tl.program_id({plan.axis})").with_changes(
        leading_lines=[
            cst.EmptyLine(
                comment=cst.Comment(
                    f"# split K: program {pid_k} takes every {split}-th K step; partial tiles are added in fp32"
                )
            )
        ]
    )
    statements_out = []
    for stmt in kernel.statements:
        if stmt is plan.loop:
            statements_out += [first, *ahead, loop]
        elif stmt is not plan.cast:  # the partial tile is added in fp32, not cast first
            statements_out.append(stmt)
    store = plan.store
    mask = next((a for a in store.args if a.keyword and a.keyword.value == "mask"), None)
    atomic = fit_call(
        expression(
            f"tl.atomic_add({code(store.args[0].value)}, {plan.accumulator}"
            + (f", mask={code(mask.value)}" if mask is not None else "")
            + ', sem="relaxed")'
        ),
        indent=4,
    )
    new = with_params(kernel.node, split).with_changes(body=kernel.node.body.with_changes(body=statements_out))
    return replace(cst.Module(body=[new]), {store: atomic}).body[0]


def _host_edits(ctx: RewriteContext, plan: SplitPlan, split: str) -> tuple[dict, list[cst.BaseStatement]]:
    """The host's edits (by node) and the core-count helper's definition: the split sized before the
    grid, the fp32 partial buffer in place of the output, the copy after the launch."""
    helper, definition = core_count_helper(ctx, dot=True)
    host = names(plan.site.host)
    host_split, partial, tiles = (unique_name(host, n) for n in ("split_k", f"{plan.output}_partial", "tiles"))
    setup = statements(f"""
        {tiles} = {_product(grid_elements(plan.grid))}
        {host_split} = max(1, min(triton.cdiv({PER_SM} * {helper}({plan.output}.device), {tiles}), {plan.k_steps} // {MIN_STEPS}))
        {partial} = torch.zeros_like({plan.output}, dtype=torch.float32)
        """)
    comment = cst.EmptyLine(
        comment=cst.Comment(
            f"# split K (too few tiles for the device): {PER_SM} programs per SM in all, {MIN_STEPS}+ K steps each"
        )
    )
    grid = plan.grid.with_changes(
        elements=[
            *[e.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for e in plan.grid.elements],
            cst.Element(cst.Name(host_split)),
        ]
    )
    call = fit_launch(plan.site, set_keyword(_with_output(plan, partial), split, cst.Name(host_split)))
    launch = plan.site.statement
    after = statement(f"{plan.output}.copy_({partial})")
    if plan.grid_statement is not None:
        anchor = plan.grid_statement
        new_anchor = replace(cst.Module(body=[anchor]), {plan.grid: grid}).body[0].with_changes(leading_lines=[])
        setup[0] = setup[0].with_changes(leading_lines=[*anchor.leading_lines, comment])
        return {
            anchor: cst.FlattenSentinel([*setup, new_anchor]),
            launch: cst.FlattenSentinel([relaunch(plan.site, call), after]),
        }, definition
    call = call.with_changes(func=call.func.with_changes(slice=[cst.SubscriptElement(cst.Index(grid))]))
    setup[0] = setup[0].with_changes(leading_lines=[*launch.leading_lines, comment])
    new_launch = relaunch(plan.site, call, leading_lines=[])
    return {launch: cst.FlattenSentinel([*setup, new_launch, after])}, definition


def _split_range(iterator: cst.Call, pid_k: str, split: str) -> cst.Call:
    """`range(0, stop, step)` -> `range(pid_k * step, stop, step * split)` (and tl.range; the
    precondition has checked the start is 0)."""
    args = positional(iterator)
    stop = code(args[0].value if len(args) == 1 else args[1].value)
    step = code(args[2].value) if len(args) == 3 else "1"
    first = f"{pid_k}" if step == "1" else f"{pid_k} * {step}"
    new = [expression(first), expression(stop), expression(split if step == "1" else f"{step} * {split}")]
    rest = [a for a in iterator.args if a.keyword is not None]
    out = [cst.Arg(v, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for v in new]
    if not rest:
        out[-1] = out[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return iterator.with_changes(args=[*out, *rest])


def _induction(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """(name, step) for a line `name += step` (or `-=`, step negated)."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.AugAssign):
        aug = stmt.body[0]
        if isinstance(aug.target, cst.Name) and isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign)):
            step = aug.value if isinstance(aug.operator, cst.AddAssign) else expression(f"-({code(aug.value)})")
            return aug.target.value, step
    return None


def _scaled(stmt: cst.SimpleStatementLine, split: str) -> cst.SimpleStatementLine:
    aug = stmt.body[0]
    return stmt.with_changes(body=[aug.with_changes(value=expression(f"({code(aug.value)}) * {split}"))])


def _accumulates(stmt: cst.CSTNode) -> str | None:
    """The accumulator of `acc += tl.dot(a, b)`, `acc = acc + tl.dot(a, b)` or `acc = tl.dot(a, b, acc)`."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if (
        isinstance(small, cst.AugAssign)
        and isinstance(small.operator, cst.AddAssign)
        and isinstance(small.target, cst.Name)
    ):
        return small.target.value if is_tl_call(small.value, "dot") else None
    target, value = simple_assignment(stmt)
    if target is None:
        return None
    if is_tl_call(value, "dot") and len(value.args) >= 3 and dotted(value.args[2].value) == target:
        return target
    if (
        isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, cst.Add)
        and dotted(value.left) == target
        and is_tl_call(value.right, "dot")
    ):
        return target
    return None


def _loop_problem(loop: cst.For, accumulator: str, after: list[cst.BaseStatement]) -> str | None:
    """Why the loop's iterations are not independent but for the accumulator, or None."""
    if not isinstance(loop.target, cst.Name):
        return "the K loop's target is not one name"
    iterator = loop.iter
    if not (
        isinstance(iterator, cst.Call)
        and dotted(iterator.func) in ("range", "tl.range", "triton.language.range")
        and 1 <= len(positional(iterator)) <= 3
    ):
        return f"the K loop is not over range(...) / tl.range(...): {code(iterator)}"
    bound_in_loop = assigned_names(loop.body) | {loop.target.value}
    inductions = {_induction(s)[0] for s in loop_body(loop) if _induction(s) and _accumulates(s) != accumulator}
    seen: set[str] = {loop.target.value}
    advanced: set[str] = set()
    for stmt in loop_body(loop):
        reads = read_names(stmt)
        if reads & advanced:  # past its advance it holds the next step's value, which splitting changes
            return f"{', '.join(sorted(reads & advanced))} is read after it advances in the same K step"
        carried = reads & (bound_in_loop - seen - inductions)
        if _accumulates(stmt) == accumulator:
            carried -= {accumulator}
        elif (step := _induction(stmt)) is not None:
            if names(step[1]) & bound_in_loop:
                return f"{step[0]} advances by a step computed in the loop"
            advanced.add(step[0])
            continue
        elif simple_assignment(stmt)[0] is None:
            return f"the K loop holds a statement other than assignments: {code(stmt).strip()[:60]}"
        elif simple_assignment(stmt)[0] in seen | inductions:
            return f"{simple_assignment(stmt)[0]} is bound twice in the K loop"
        if carried:
            return f"{', '.join(sorted(carried))}: a value carried from the previous K step"
        seen |= assigned_names(stmt)
    read_after = set().union(*(read_names(s) for s in after)) if after else set()
    carried = (bound_in_loop - {accumulator}) & read_after
    if carried:
        return f"{', '.join(sorted(carried))} is read after the K loop"
    return None


def _plan(ctx: RewriteContext, kernel: Kernel) -> SplitPlan | str | None:
    tiles = dot_tiles(kernel)
    sites = sites_of(ctx.module, kernel.name)
    if tiles is None or not sites:
        return None
    if tiles.loop is None or tiles.loop not in kernel.statements:
        return "the tl.dot is not in a K loop at the kernel's top level"
    if kernel.autotuned:
        return "autotuned"
    if len(sites) != 1:
        return launched(sites)
    if not {"torch", "triton"} <= module_names(ctx.module):
        return "the module does not import torch and triton (the host code needs both)"
    loop = tiles.loop
    accumulator = next((a for a in map(_accumulates, loop_body(loop)) if a), None)
    if accumulator is None:
        return "the tl.dot does not add into an accumulator"
    index = kernel.statements.index(loop)
    initial = [v for t, v in map(simple_assignment, kernel.statements[:index]) if t == accumulator]
    if not initial or not is_tl_call(initial[-1], "zeros"):
        return f"{accumulator} does not start from tl.zeros (a start value would be added once per split)"
    after = list(kernel.statements[index + 1 :])
    problem = _loop_problem(loop, accumulator, after)
    if problem:
        return problem
    stores = calls(kernel.node.body, "store")
    if len(stores) != 1 or calls(kernel.node.body, *[f"atomic_{op}" for op in ("add", "max", "min", "xchg", "cas")]):
        return "the kernel writes memory more than once (one tl.store of the tile is split)"
    store = stores[0]
    if not any(store is c for s in after for c in walk(s)) or any(
        isinstance(s, cst.BaseCompoundStatement) for s in after
    ):
        return "the store is not a top-level statement after the K loop"
    value = store.args[1].value if len(store.args) >= 2 and store.args[1].keyword is None else None
    if value is None or len(positional(store)) != 2 or {a.keyword.value for a in store.args if a.keyword} - {"mask"}:
        return "the store takes arguments other than (pointer, value, mask=)"
    cast = _cast_line(value, after, accumulator)
    if not _cast_of(value, accumulator) and cast is None:
        return f"the stored value is not {accumulator} (or {accumulator}.to(...)): an epilogue does not split"
    readers = [s for s in after if ({accumulator} | ({code(value)} if cast else set())) & read_names(s)]
    if len(readers) > (2 if cast else 1):
        return f"{accumulator} is read after the K loop by more than the store"
    pids = program_id_names(kernel)
    program_ids = [axis_of(c) for c in calls(kernel.node.body, "program_id")]
    if calls(kernel.node.body, "num_programs") or len(program_ids) != len(pids):
        return "reads tl.program_id / tl.num_programs beyond the tile ids"
    site = sites[0]
    grid, grid_statement = resolve_grid(site)
    axes = grid_elements(grid)
    if axes is None or not 1 <= len(axes) <= 2 or set(program_ids) - set(range(len(axes))):
        return "the grid is not a literal tuple of one or two axes"
    if grid_shared(ctx.module, site):
        return "the grid variable serves other launches"
    output = _output(kernel, site, store)
    if output is None:
        return "the stored pointer is not a host tensor variable passed to the kernel"
    k_steps = _host_steps(kernel, site, loop)
    if k_steps is None:
        return "the K loop's bound is not one kernel argument the launch passes"
    anchor = grid_statement or site.statement
    bound = bound_before(site, anchor)
    if bound is None:
        return f"the grid is not bound in a block of {site.host_name}"
    if any(
        not any(n is anchor for n in walk(loop))
        for loop in walk(site.host.body)
        if isinstance(loop, (cst.For, cst.While)) and any(n is site.statement for n in walk(loop.body))
    ):
        return "a loop runs the launch without its grid's line: the fp32 buffer would add up across iterations"
    needed = set().union(*(names(e) for e in axes), names(k_steps), {output}) - {"triton", "torch", "min", "max"}
    if needed - bound:
        return f"{', '.join(sorted(needed - bound))} is bound after the grid: the split cannot be sized before it"
    return SplitPlan(
        kernel,
        site,
        tiles,
        loop,
        accumulator,
        tuple(s for s in loop_body(loop) if _induction(s) and _accumulates(s) != accumulator),
        store,
        cast,
        len(axes),
        grid,
        grid_statement,
        output,
        k_steps,
    )


def _cast_of(value: cst.BaseExpression, accumulator: str) -> bool:
    """`acc` or `acc.to(...)`."""
    if dotted(value) == accumulator:
        return True
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "to"
        and dotted(value.func.value) == accumulator
    )


def _cast_line(
    value: cst.BaseExpression, after: list[cst.BaseStatement], accumulator: str
) -> cst.SimpleStatementLine | None:
    """The one line `c = acc.to(...)` (or `c = acc`) binding the stored name `c`, else None."""
    if not isinstance(value, cst.Name):
        return None
    lines = [s for s in after if value.value in assigned_names(s)]
    if len(lines) == 1 and simple_assignment(lines[0])[0] == value.value:
        return lines[0] if _cast_of(simple_assignment(lines[0])[1], accumulator) else None
    return None


def _product(axes: list[cst.BaseExpression]) -> str:
    return code(axes[0]) if len(axes) == 1 else " * ".join(operand(e) for e in axes)


def _output(kernel: Kernel, site: LaunchSite, store: cst.Call) -> str | None:
    """The host variable passed for the pointer parameter the store writes through (followed through
    local names, `c_ptrs = c_ptr + ...`)."""
    local = {t: v for t, v in map(simple_assignment, walk(kernel.node.body)) if t}
    reached, frontier = set(), names(store.args[0].value)
    while frontier - reached:
        name = (frontier - reached).pop()
        reached.add(name)
        if name in local:
            frontier |= names(local[name])
    written = [p for p in pointer_params(kernel) if p in reached]
    if len(written) != 1:
        return None
    value = site.value(kernel, written[0])
    return value.value if isinstance(value, cst.Name) else None


def _with_output(plan: SplitPlan, partial: str) -> cst.Call:
    """The launch with the fp32 partial buffer in place of the output tensor."""
    call = plan.site.call
    args = [a.with_changes(value=cst.Name(partial)) if dotted(a.value) == plan.output else a for a in call.args]
    return call.with_changes(args=args)


def _host_steps(kernel: Kernel, site: LaunchSite, loop: cst.For) -> str | None:
    """The loop's trip count on the host: `triton.cdiv(<K passed>, <step passed>)`, or the bound passed."""
    args = positional(loop.iter)
    start, stop = (None, args[0].value) if len(args) == 1 else (args[0].value, args[1].value)
    step = args[2].value if len(args) == 3 else None
    if start is not None and code(start) != "0":
        return None
    params = [n for n in names(stop) if n in kernel.params and n not in kernel.constexprs]
    if len(params) != 1:
        return None
    extent = site.value(kernel, params[0])
    if extent is None:
        return None
    host = {params[0]: operand(extent)}
    for name in names(stop) | (names(step) if step is not None else set()):
        if name in kernel.constexprs:
            passed = site.value(kernel, name)
            if passed is None:
                return None
            host[name] = operand(passed)
        elif name not in host and name not in ("tl", "triton"):
            return None
    stop_host = _substitute(stop, host)
    if step is None:  # range(cdiv(K, BLOCK_K)): the bound is the step count
        return stop_host.replace("tl.cdiv", "triton.cdiv")
    return f"triton.cdiv({stop_host}, {_substitute(step, host)})"


def _substitute(expr: cst.BaseExpression, host: dict[str, str]) -> str:
    class Swap(cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node):
            return cst.parse_expression(host[original_node.value]) if original_node.value in host else updated_node

    return code(expr.visit(Swap()))
