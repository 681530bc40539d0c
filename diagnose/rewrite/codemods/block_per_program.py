"""block-per-program: a kernel that moves one element per program moves a block of them."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import (
    and_mask,
    fit_launch,
    relaunch,
    replace,
    set_keyword,
    statement,
    unique_name,
    with_params,
)
from diagnose.rewrite.loop_nest import NEGATED, OPERATORS
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, grid_elements, grid_shared, launched, resolve_grid, sites_of
from diagnose.rewrite.source import (
    EFFECTS,
    REDUCTIONS,
    Kernel,
    axis_of,
    calls,
    code,
    is_number,
    is_program_call,
    is_tl_call,
    kernels,
    module_names,
    names,
    program_calls,
    same,
    simple_assignment,
    tl_name,
    walk,
)

BLOCK = 1024  # elements per program: 8 per thread of 4 warps, two 128-bit fp32 accesses each
BLOCKY = ("arange", "zeros", "full", "make_block_ptr", "make_tensor_descriptor")
ORDER = ("<", "<=", ">", ">=")  # the comparisons a guard on the program id may make
RANDOM = ("rand", "randn", "randint", "randint4x", "rand4x")


@dataclass(frozen=True)
class BlockPlan:
    kernel: Kernel
    site: LaunchSite
    pid: cst.SimpleStatementLine  # `pid = tl.program_id(axis)`, the grid's last axis
    axis: int
    guards: tuple[tuple[cst.BaseStatement, str], ...]  # (`if pid < n:` or `if pid >= n: return`, its lanes)
    widened: tuple[cst.Assign, ...]  # `acc = 0.0` before a loop that makes `acc` differ between lanes
    grid: cst.BaseExpression
    grid_statement: cst.SimpleStatementLine | None
    bounded: bool  # a guard bounds the lanes by the grid's own extent: no `n_programs` needed


class BlockPerProgram(Rewrite):
    """## What it changes
    A kernel whose program moves one element — `pid = tl.program_id(0)`, then scalar loads and
    stores at offsets computed from `pid` (`tl.load(x_ptr + pid)`, `row = pid // N`), often under
    `if pid < n:` or after `if pid >= n: return` — takes 1024 elements per program: `pid` becomes
    `tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)`, a `mask` of the lanes that existed
    before (the guard's condition, else `pid < n_programs` with the old grid's extent passed in) is
    and-ed into every load, store and atomic whose address reads `pid`, the guard goes, and the grid
    `(n,)` becomes `(triton.cdiv(n, 1024),)` with `BLOCK_SIZE=1024` at the launch. On a grid of two or
    three axes (a CUDA kernel's 2-D thread grid, `row = tl.program_id(0)`, `col = tl.program_id(1)`)
    the last axis takes the block: `(M, N)` becomes `(M, triton.cdiv(N, 1024))`, neighbouring columns
    on neighbouring lanes; the other program ids stay what they were, the same for every lane.

    ## When it is valid
    Lanes compute independently what programs computed: the kernel reads the program id of the grid's
    last axis once, at its top level, and never `tl.num_programs`; it builds no block (no `tl.arange`, `tl.zeros`,
    block pointer); its loops are `for` loops over a `range` the same for every lane (`for k in
    range(K)`, not `range(start, end)` with `start` loaded through `pid`), each lane running the loop
    its program ran, and a value they carry that starts as a number (`acc = 0.0`) starts as a block
    of it (`tl.full([BLOCK_SIZE], 0.0, tl.float32)`: the type Triton gave the number, now one per
    lane, so the loop keeps its carried type); no reduction or scan; no branch or early return other than the
    guards reads `pid` or anything computed from it (a branch on parameters stays); no call of a
    function other than `tl` ones, casts, `tl.random`'s counter-based generators and builtins on values
    the same for every lane (`range` among them); every store and atomic addresses through `pid`. The
    kernel has one launch, on a literal grid with as many axes as it reads program ids (or a `lambda
    meta: (n,)` that does not read `meta`) or a grid variable no other launch uses.

    ## Why it is faster
    A program is a thread block: moving one element it keeps one lane of 128 busy, issues one 32-bit
    access per load and needs one program per element, so the launch is dominated by scheduling; a
    program that loops (a dot product, a pooling window, a convolution's taps per output element)
    runs its whole loop on one lane.
    With a block, every lane works and accesses coalesce into 128-bit transactions (Triton tutorial
    01: a vector add reaches copy bandwidth with 1024 elements per program). First versions
    translated from a CUDA per-thread kernel have this shape.

    ## Safety
    Safe: the same arithmetic per element; lanes past the old grid or failing the guard are masked
    out of every access.

    ## Answers
    TRI025 (scalar-kernel-without-block); TRI008 (scalar-loop-reduction) where each program's loop
    reduces for one element (a GEMV row, a pooling window, a convolution's taps): block-loop-sum loads
    that loop's scalars as a block, this runs 1024 such loops side by side (where the loop is short,
    nine taps of a 3x3 window, the program count is the cost block-loop-sum leaves).

    ## References
    Triton tutorial 01-vector-add.
    """

    id = "block-per-program"
    title = "A block of elements per program for a kernel that moves one"
    codes = ("TRI025", "TRI008")

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx.module, k),
            BlockPlan,
            lambda p: f"one element per program, indexed by {simple_assignment(p.pid)[0]}",
            "no kernel moves one element per program",
        )

    def transform(self, ctx: RewriteContext, plan: BlockPlan) -> str:
        kernel = plan.kernel
        pid, _ = simple_assignment(plan.pid)
        taken = names(kernel.node) | set(kernel.params)
        block = unique_name(taken, "BLOCK_SIZE")
        extent = unique_name(taken | {block}, "n_programs")
        mask = unique_name(taken | {block, extent}, "mask")
        terms = [lanes for _, lanes in plan.guards]
        if not plan.bounded:
            terms.insert(0, f"{pid} < {extent}")
        lanes = " & ".join(f"({t})" for t in terms) if len(terms) > 1 else terms[0]
        dependent = _dependent(kernel, pid)
        edits: dict[cst.CSTNode, cst.CSTNode] = {}
        for node in walk(kernel.node.body):
            if is_tl_call(node, "load", "store", *EFFECTS) and node.args and names(node.args[0].value) & dependent:
                edits[node] = and_mask(node, cst.Name(mask))
        for assign in plan.widened:
            number = assign.value.expression if isinstance(assign.value, cst.UnaryOperation) else assign.value
            dtype = "tl.int32" if isinstance(number, cst.Integer) else "tl.float32"
            edits[assign.value] = cst.parse_expression(f"tl.full([{block}], {code(assign.value)}, {dtype})")
        body: list[cst.BaseStatement] = []
        guards = {id(g): g for g, _ in plan.guards}
        for stmt in kernel.statements:
            if stmt is plan.pid:
                first = f"tl.program_id({plan.axis}) * {block} + tl.arange(0, {block})"
                body.append(statement(f"{pid} = {first}\n").with_changes(leading_lines=stmt.leading_lines))
                body.append(statement(f"{mask} = {lanes}\n"))
            elif id(stmt) in guards:
                if isinstance(stmt, cst.If) and not _returns(stmt):
                    inner = [replace(s, edits) for s in stmt.body.body]
                    body.extend([inner[0].with_changes(leading_lines=stmt.leading_lines), *inner[1:]])
            else:
                body.append(replace(stmt, edits))
        params = [f"{block}: tl.constexpr"] if plan.bounded else [extent, f"{block}: tl.constexpr"]
        new_kernel = with_params(kernel.node, *params).with_changes(body=kernel.node.body.with_changes(body=body))
        literal = _grid_tuple(plan.grid)
        extents = [code(e) for e in grid_elements(literal)]
        axis = extents[plan.axis]
        extents[plan.axis] = f"triton.cdiv({axis}, {BLOCK})"
        new_grid = cst.parse_expression(f"({', '.join(extents)}{',' * (len(extents) == 1)})")
        if literal is not plan.grid:  # `lambda meta: (n,)`: the lambda stays, its tuple changes
            new_grid = plan.grid.with_changes(body=new_grid)
        call = plan.site.call
        if not plan.bounded:
            call = set_keyword(call, extent, cst.parse_expression(axis))
        call = set_keyword(call, block, cst.Integer(str(BLOCK)))
        mapping: dict[cst.CSTNode, cst.CSTNode] = {kernel.node: new_kernel}
        if plan.grid_statement is not None:
            mapping[plan.grid] = new_grid
        else:
            call = call.with_changes(func=call.func.with_changes(slice=[cst.SubscriptElement(cst.Index(new_grid))]))
        mapping[plan.site.statement] = relaunch(plan.site, fit_launch(plan.site, call))
        return replace(ctx.module, mapping).code


def _plan(module: cst.Module, kernel: Kernel) -> BlockPlan | str | None:
    if calls(kernel.node.body, *BLOCKY):
        return None  # it builds blocks already
    ids = [c for c in program_calls(kernel.node.body, "program_id") if is_program_call(c, "program_id")]
    if not ids or any(axis_of(c) is None for c in ids):
        return None
    axis = max(axis_of(c) for c in ids)  # the grid's last axis: neighbouring programs, neighbouring lanes
    on_axis = [c for c in ids if axis_of(c) == axis]
    pid = next(
        (
            s
            for s in kernel.statements
            if (v := simple_assignment(s)[1]) is not None and is_program_call(v, "program_id") and axis_of(v) == axis
        ),
        None,
    )
    if pid is None or len(on_axis) != 1:
        return f"reads tl.program_id({axis}) other than once, at its top level"
    if program_calls(kernel.node.body, "num_programs"):
        return "reads tl.num_programs"
    if kernel.autotuned:
        return "autotuned"
    name = simple_assignment(pid)[0]
    dependent = _dependent(kernel, name)
    for node in walk(kernel.node.body):
        if isinstance(node, cst.While):
            return "has a while loop"
        if isinstance(node, cst.For) and (trips := _lane_uniform(node, dependent)) is not None:
            return trips
        if isinstance(node, cst.Call):
            op = tl_name(node.func)
            if op in REDUCTIONS or op in ("cumsum", "cumprod", "associative_scan", "sort", "dot"):
                return f"calls tl.{op}, which would reduce across the lanes"
            if op is None and not _lanewise_call(node, dependent):
                return f"calls {code(node.func)}"
    if any(isinstance(n, (cst.Break, cst.Continue)) for n in walk(kernel.node.body)):
        return "leaves a loop early"
    guards: list[tuple[cst.BaseStatement, str]] = []
    at = kernel.statements.index(pid)
    for position, stmt in enumerate(kernel.statements):
        if position <= at:
            if any(isinstance(n, cst.Return) for n in walk(stmt)):
                return "returns before its program id is bound"
            continue
        if isinstance(stmt, cst.If):
            lanes = _guard(stmt, name, dependent - {name}, last=position == len(kernel.statements) - 1)
            if isinstance(lanes, str) and lanes.startswith("!"):
                return lanes[1:]
            if lanes is not None:
                guards.append((stmt, lanes))
                if _returns(stmt):
                    continue
                stmt = stmt.body  # the guarded rest of the kernel: its branches are checked as any
        for node in walk(stmt):
            if isinstance(node, (cst.If, cst.IfExp)) and names(node.test) & dependent:
                return f"branches on `{code(node.test)}`, which differs between lanes"
            if isinstance(node, cst.Return):
                return "returns early other than by a guard on its program id"
    stores = [n for n in walk(kernel.node.body) if is_tl_call(n, "store", *EFFECTS)]
    if not stores:
        return None  # it writes nothing: no element to move
    for call in stores:
        if not (call.args and names(call.args[0].value) & dependent):
            return f"`{code(call)}` does not address through {name}"
    widened = _carried_numbers(kernel, dependent)
    if isinstance(widened, str):
        return widened
    sites = sites_of(module, kernel.name)
    if len(sites) != 1:
        return launched(sites) if sites else None
    site = sites[0]
    if "triton" not in module_names(module):
        return "the module does not import triton (the grid needs triton.cdiv)"
    grid, grid_statement = resolve_grid(site)
    axes = grid_elements(_grid_tuple(grid))
    if axes is None or len(axes) != axis + 1:
        return f"the grid is not a {axis + 1}-element tuple"
    if grid_statement is not None and grid_shared(module, site):
        return "the grid variable serves other launches"
    bounded = any(_bound_by(lanes, name, kernel, site, axes[axis]) for _, lanes in guards)
    return BlockPlan(kernel, site, pid, axis, tuple(guards), widened, grid, grid_statement, bounded)


def _grid_tuple(grid: cst.BaseExpression) -> cst.BaseExpression:
    """The tuple a grid is: itself, or the body of a `lambda meta: (n,)` that does not read `meta`
    (first versions write the tutorial's callable grid with a fixed count)."""
    if isinstance(grid, cst.Lambda) and not names(grid.body) & {p.name.value for p in grid.params.params}:
        return grid.body
    return grid


def _lane_uniform(loop: cst.For, dependent: set[str]) -> str | None:
    """Why a `for` loop cannot run on every lane at once, or None: it iterates a `range` (Python's,
    `tl.range`, `tl.static_range`) whose bounds read nothing computed from the program id."""
    iterated = loop.iter
    if not (
        isinstance(iterated, cst.Call)
        and (code(iterated.func) == "range" or tl_name(iterated.func) in ("range", "static_range"))
        and isinstance(loop.target, cst.Name)
    ):
        return f"loops over `{code(iterated)}`, not a range"
    if names(iterated) & dependent:
        return f"the trip count of `for {loop.target.value} in {code(iterated)}` differs between lanes"
    return None


def _carried_numbers(kernel: Kernel, dependent: set[str]) -> tuple[cst.Assign, ...] | str:
    """The bindings outside loops of a name a loop re-binds and that differs between lanes, each of
    a number (`acc = 0.0`, `best = -float("inf")`): they become blocks. A name a loop carries from a
    value the lanes share that is not a number is a reason to decline."""
    loops = [n for n in walk(kernel.node.body) if isinstance(n, cst.For)]
    inside = {id(n) for loop in loops for n in walk(loop.body)}
    carried = set()
    for loop in loops:
        for node in walk(loop.body):
            if isinstance(node, (cst.Assign, cst.AugAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                carried |= {t.value for t in targets if isinstance(t, cst.Name)} & dependent
    widened = []
    for node in walk(kernel.node.body):
        if not isinstance(node, cst.Assign) or id(node) in inside or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if not (isinstance(target, cst.Name) and target.value in carried) or names(node.value) & dependent:
            continue
        if not is_number(node.value):
            return f"a loop carries `{target.value}` from `{code(node.value)}`, the same for every lane"
        widened.append(node)
    return tuple(widened)


def _lanewise_call(call: cst.Call, dependent: set[str]) -> bool:
    """A call that is not a `tl` op but works per lane: a cast, Triton's counter-based random numbers
    (`tl.random.rand(seed, offsets)`: one value per offset, the same whether offsets are a scalar or a
    block), or a Python builtin on values that are the same for every lane (`min(n, 4)`)."""
    func = code(call.func)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cast"):
        return True
    if func.rpartition(".")[2] in RANDOM and func.startswith(("tl.", "triton.language.")):
        return True
    return func in ("min", "max", "abs", "int", "float", "range") and not names(call) & dependent


def _dependent(kernel: Kernel, pid: str) -> set[str]:
    """Names computed from `pid`, through any binding (flow-insensitive)."""
    bindings = []
    for node in walk(kernel.node.body):
        if isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            bindings.append((set().union(*(names(t) for t in targets)), names(node.value)))
    found = {pid}
    changed = True
    while changed:
        changed = False
        for targets, read in bindings:
            if read & found and not targets <= found:
                found |= targets
                changed = True
    return found


def _returns(stmt: cst.If) -> bool:
    return len(stmt.body.body) == 1 and any(isinstance(n, cst.Return) for n in walk(stmt.body.body[0]))


def _guard(stmt: cst.If, pid: str, others: set[str], last: bool) -> str | None:
    """The lanes a guard keeps (`pid < n` for `if pid < n:` holding the rest of the kernel, or for
    `if pid >= n: return`); None when `stmt` is not a guard; `!reason` when it guards but cannot go."""
    test = stmt.test
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and OPERATORS.get(type(test.comparisons[0].operator)) in ORDER
        and code(test.left) == pid
        and not names(test.comparisons[0].comparator) & (others | {pid})
    ):
        return None
    symbol = OPERATORS[type(test.comparisons[0].operator)]
    bound = code(test.comparisons[0].comparator)
    if stmt.orelse is not None:
        return f"!the guard `if {code(test)}:` has an else branch"
    if _returns(stmt):
        return f"{pid} {NEGATED[symbol]} {bound}"
    if not last:
        return f"!statements follow the guard `if {code(test)}:`"
    return f"{pid} {symbol} {bound}"


def _bound_by(lanes: str, pid: str, kernel: Kernel, site: LaunchSite, extent: cst.BaseExpression) -> bool:
    """Whether `lanes` is `pid < p` with `p` a parameter the launch passes the grid's extent for."""
    left, _, right = lanes.partition(" < ")
    if left != pid or right not in kernel.params:
        return False
    passed = site.value(kernel, right)
    return passed is not None and same(passed, extent)
