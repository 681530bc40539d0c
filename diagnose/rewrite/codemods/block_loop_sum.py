"""block-loop-sum: a loop that sums one scalar load per iteration sums a block per iteration."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import and_mask, replace, set_keyword, statement, statements, unique_name
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import (
    REDUCTIONS,
    calls,
    EFFECTS,
    Kernel,
    code,
    int_value,
    is_number,
    is_tl_call,
    keyword,
    kernels,
    names,
    simple_assignment,
    tl_name,
    walk,
)

BLOCK = 512  # loop iterations per block: four fp32 (one 128-bit access) per thread of 4 warps
SMALL = 64  # a literal trip count at most this is covered by one block of next_power_of_2(count)


@dataclass(frozen=True)
class LoopPlan:
    kernel: Kernel
    loop: cst.For
    block: cst.BaseSuite  # the block holding the loop and the accumulators' bindings
    index: str  # the loop variable
    start: str
    stop: str
    accumulators: tuple[tuple[cst.SimpleStatementLine, str], ...]  # (binding `acc = 0.0`, its name)
    width: int  # lanes per block


class BlockLoopSum(Rewrite):
    """## What it changes
    A loop that adds one scalar load per iteration into a scalar — `acc = 0.0`, then `for k in
    range(K): acc += tl.load(a_ptr + row * K + k) * tl.load(x_ptr + k)` (a GEMV, a mean, a window of
    a pooling written one element at a time) — steps by a block instead: `for k0 in range(0, K,
    512)`, `k = k0 + tl.arange(0, 512)`, each load masked to `k < K` (`other=0`), each addend kept
    only where `k < K` (`tl.where`), the accumulator a `tl.zeros([512], tl.float32)` block, and after
    the loop `acc = tl.sum(acc, axis=0)`. A loop over a literal count of at most 64 takes one block of
    `next_power_of_2(count)` lanes.

    ## When it is valid
    The sum is the same sum in another order. Required: a `for` over `range(stop)`, `range(start,
    stop)` or `range(start, stop, 1)` whose body holds only assignments of temporaries and additions
    into accumulators (`acc += e`, `acc = acc + e`); each accumulator bound to a number just before
    the loop in the same block and read in the loop only by its own addition; temporaries not read
    after the loop; no store, atomic, branch, nested loop, `break`/`continue`, reduction or call of
    another function in the body; every load in it reads one scalar (no `tl.arange`); the loop's
    start and stop not assigned in it.

    ## Why it is faster
    One scalar load per iteration is one 32-bit access per program that waits for memory before the
    next, and the other 127 threads of the program do nothing: a block load spreads the iterations
    over all lanes with coalesced, vectorized accesses, and one `tl.sum` (a tree across the warp)
    replaces K dependent adds. First versions written this way ran a GEMV + sigmoid at 19-37% of its
    roofline bound and an adaptive average pool at 1-2%. Compiled for sm_90, the GEMV fixture's
    loads go from one 32-bit scalar access per program to 128-bit accesses on every lane.

    ## Safety
    Safe: the same terms summed in another order (floating-point rounding may differ in the last
    bits); the lanes past `stop` are masked out of every load and add nothing.

    ## Answers
    TRI008 (scalar-loop-reduction).

    ## References
    Triton tutorial 02-fused-softmax and 05-layer-norm (a block per iteration, `tl.sum` at the end);
    CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory".
    """

    id = "block-loop-sum"
    title = "A block of iterations per step for a loop that sums scalar loads"
    codes = ("TRI008",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            _plan,
            LoopPlan,
            lambda p: f"a loop over {p.index} sums scalar loads into {', '.join(n for _, n in p.accumulators)}",
            "no kernel sums one scalar load per loop iteration",
        )

    def transform(self, ctx: RewriteContext, plan: LoopPlan) -> str:
        taken = names(plan.kernel.node) | set(plan.kernel.params)
        step = unique_name(taken, f"{plan.index}0")
        width = plan.width
        lanes = cst.parse_expression(f"{plan.index} < {plan.stop}")
        edits: dict[cst.CSTNode, cst.CSTNode] = {}
        for node in walk(plan.loop.body):
            if isinstance(node, cst.Call) and is_tl_call(node, "load") and plan.index in names(node.args[0].value):
                edits[node] = _masked_load(node, lanes)
        body = replace(plan.loop.body, edits)
        summed = [name for _, name in plan.accumulators]
        zeros = {
            name: "0" if isinstance(simple_assignment(b)[1], cst.Integer) else "0.0" for b, name in plan.accumulators
        }
        lines = []
        for line in body.body:
            small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
            target = _accumulated(small) if small is not None else None
            if target in summed:
                sign = (
                    "-" if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.SubtractAssign) else "+"
                )
                kept = f"tl.where({code(lanes)}, {code(_addend(small))}, {zeros[target]})"
                line = statement(f"{target} {sign}= {kept}\n").with_changes(leading_lines=line.leading_lines)
            lines.append(line)
        head = statement(f"{plan.index} = {step} + tl.arange(0, {width})\n")
        loop = plan.loop.with_changes(
            target=cst.Name(step),
            iter=cst.parse_expression(f"range({plan.start}, {plan.stop}, {width})"),
            body=body.with_changes(body=[head, *lines]),
            leading_lines=[
                *plan.loop.leading_lines,
                cst.EmptyLine(
                    comment=cst.Comment(f"# {width} iterations per step as one block load, summed once after the loop")
                ),
            ],
        )
        mapping: dict[cst.CSTNode, cst.CSTNode] = {}
        totals = []
        for binding, name in plan.accumulators:
            value = simple_assignment(binding)[1]
            dtype = "tl.int32" if isinstance(value, cst.Integer) else "tl.float32"
            mapping[binding] = statement(f"{name} = tl.zeros([{width}], {dtype})\n").with_changes(
                leading_lines=binding.leading_lines
            )
            start = "" if code(value) in ("0", "0.0", "0.") else f"{code(value)} + "
            totals.append(f"{name} = {start}tl.sum({name}, axis=0)")
        sums = statements("\n".join(totals))
        mapping[plan.loop] = cst.FlattenSentinel([loop, *sums])
        return replace(ctx.module, mapping).code


def _plan(kernel: Kernel) -> LoopPlan | str | None:
    found = None
    blocks = _block_names(kernel)
    for block in (n for n in walk(kernel.node) if isinstance(n, cst.IndentedBlock)):
        for position, stmt in enumerate(block.body):
            if isinstance(stmt, cst.For):
                why = _loop_plan(kernel, blocks, block, position, stmt)
                if isinstance(why, LoopPlan):
                    return why
                found = found or why
    return found


def _loop_plan(
    kernel: Kernel, blocks: set[str], block: cst.IndentedBlock, position: int, loop: cst.For
) -> LoopPlan | str | None:
    """The plan for `loop`, at `position` in `block`; `blocks` are the kernel's names bound to blocks."""
    loads = [c for c in walk(loop.body) if is_tl_call(c, "load")]
    if not loads or not isinstance(loop.target, cst.Name):
        return None
    if any(c.args and names(c.args[0].value) & blocks for c in loads) or calls(loop.body, "arange"):
        return None  # it loads blocks already: not a loop of scalar loads
    index = loop.target.value
    bounds = _range(loop.iter)
    if bounds is None:
        return f"the loop over {index} is not over range(stop) or range(start, stop) with step 1"
    start, stop = bounds
    accumulated: list[str] = []
    temporaries: set[str] = set()
    for line in loop.body.body:
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            return f"the loop over {index} holds a compound statement"
        small = line.body[0]
        target = _accumulated(small)
        if target is not None:
            accumulated.append(target)
            continue
        name, value = simple_assignment(line)
        if name is None or value is None:
            return f"the loop over {index} holds `{code(small)}`"
        temporaries.add(name)
    if not accumulated:
        return None
    for node in walk(loop.body):
        if isinstance(node, cst.Call):
            name = tl_name(node.func)
            if name in REDUCTIONS or name in EFFECTS or name == "arange":
                return f"the loop over {index} calls tl.{name}"
            if name is None and not _method_call(node):
                return f"the loop over {index} calls {code(node.func)}"
        if isinstance(node, (cst.Break, cst.Continue, cst.Return)):
            return f"the loop over {index} leaves early"
    if not any(c.args and index in names(c.args[0].value) for c in loads):
        return f"no load of the loop over {index} reads at {index}"
    if (names(cst.parse_expression(start)) | names(cst.parse_expression(stop))) & (temporaries | set(accumulated)):
        return f"the loop over {index} assigns its own bounds"
    accumulators = []
    for name in dict.fromkeys(accumulated):
        binding = next(
            (s for s in reversed(block.body[:position]) if simple_assignment(s)[0] == name or name in names(s)),
            None,
        )
        if binding is None or simple_assignment(binding)[0] != name or not is_number(simple_assignment(binding)[1]):
            return f"{name} is not bound to a number just before the loop over {index}"
        reads = [
            n
            for line in loop.body.body
            for n in walk(_addend(line.body[0]) if _accumulated(line.body[0]) == name else line)
            if isinstance(n, cst.Name) and n.value == name
        ]
        if reads:
            return f"the loop over {index} reads {name} besides adding to it"
        accumulators.append((binding, name))
    after = block.body[position + 1 :]
    if any(names(s) & temporaries for s in after):
        return f"a temporary of the loop over {index} is read after it"
    if int_value(cst.parse_expression(stop)) is not None and int_value(cst.parse_expression(start)) == 0:
        count = int_value(cst.parse_expression(stop))
        width = 1 << max(0, count - 1).bit_length() if count <= SMALL else BLOCK
    else:
        width = BLOCK
    return LoopPlan(kernel, loop, block, index, start, stop, tuple(accumulators), width)


def _block_names(kernel: Kernel) -> set[str]:
    """Names the kernel binds to blocks: from `tl.arange`, `tl.zeros`, `tl.full`, or from such names."""
    bindings = [
        (target, value)
        for node in walk(kernel.node.body)
        if isinstance(node, (cst.Assign, cst.AugAssign))
        for target, value in [
            (code(node.targets[0].target) if isinstance(node, cst.Assign) else code(node.target), node.value)
        ]
    ]
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if target not in found and (calls(value, "arange", "zeros", "full") or names(value) & found):
                found.add(target)
                changed = True
    return found


def _range(expr: cst.BaseExpression) -> tuple[str, str] | None:
    """(start, stop) of `range(stop)`, `range(start, stop)`, `range(start, stop, 1)` (also `tl.range`)."""
    if not (isinstance(expr, cst.Call) and code(expr.func) in ("range", "tl.range")):
        return None
    args = [a for a in expr.args if a.keyword is None and not a.star]
    if len(args) != len(expr.args) or not 1 <= len(args) <= 3:
        return None
    if len(args) == 3 and int_value(args[2].value) != 1:
        return None
    if len(args) == 1:
        return "0", code(args[0].value)
    return code(args[0].value), code(args[1].value)


def _accumulated(small: cst.BaseSmallStatement) -> str | None:
    """`acc += e`, `acc -= e` or `acc = acc + e`: the accumulator's name."""
    if (
        isinstance(small, cst.AugAssign)
        and isinstance(small.target, cst.Name)
        and isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign))
    ):
        return small.target.value
    if (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and isinstance(small.value, cst.BinaryOperation)
        and isinstance(small.value.operator, cst.Add)
        and code(small.value.left) == small.targets[0].target.value
    ):
        return small.targets[0].target.value
    return None


def _addend(small: cst.BaseSmallStatement) -> cst.BaseExpression:
    """What an accumulation adds: `e` of `acc += e` or of `acc = acc + e`."""
    return small.value if isinstance(small, cst.AugAssign) else small.value.right


def _method_call(call: cst.Call) -> bool:
    """A method of a value (`x.to(tl.float32)`), not a function of the module."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cast")


def _masked_load(load: cst.Call, lanes: cst.BaseExpression) -> cst.Call:
    """The load with `lanes` in its mask (`other=0` where it had none)."""
    new = and_mask(load, lanes)
    other = keyword(new, "other")
    if other is None and len([a for a in new.args if a.keyword is None]) < 3:
        new = set_keyword(new, "other", cst.Float("0.0"))
    return new
