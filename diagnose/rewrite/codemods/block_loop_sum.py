"""block-loop-sum: a loop that sums one scalar load per iteration sums a block per iteration."""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import and_mask, replace, set_keyword, statement, statements, unique_name
from diagnose.rewrite.loop_nest import Level, flattened, lane_terms, nest, skip_guard
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
    loop: cst.For  # the outermost loop of the nest
    block: cst.BaseSuite  # the block holding the loop and the accumulators' bindings
    levels: tuple[Level, ...]  # outermost first; one for a plain loop
    prelude: tuple[cst.BaseStatement, ...]  # assignments of the outer loops, before the inner loop
    body: tuple[cst.BaseStatement, ...]  # the innermost loop's statements
    accumulators: tuple[tuple[cst.SimpleStatementLine, str], ...]  # (binding `acc = 0.0`, its name)
    width: int  # lanes per block
    guarded: bool  # `if C: continue` or `if C: acc += ...` in the nest: a mask variable narrows the lanes


class BlockLoopSum(Rewrite):
    """## What it changes
    A loop that adds one scalar load per iteration into a scalar — `acc = 0.0`, then `for k in
    range(K): acc += tl.load(a_ptr + row * K + k) * tl.load(x_ptr + k)` (a GEMV, a mean, a window of
    a pooling written one element at a time) — steps by a block instead: `for k0 in range(0, K,
    512)`, `k = k0 + tl.arange(0, 512)`, each load masked to `k < K` (`other=0`), each addend kept
    only where `k < K` (`tl.where`), the accumulator a `tl.zeros([512], tl.float32)` block, and after
    the loop `acc = tl.sum(acc, axis=0)`. A loop over a literal count of at most 64 takes one block of
    `next_power_of_2(count)` lanes. A rectangular nest of up to three such loops (a pooling window
    `for h in range(h0, h1): for w in range(w0, w1)`, a 3x3 filter's taps) becomes one loop over
    their flat index, each index recovered from it (`h = h0 + hw // w_span`, `w = w0 + hw % w_span`);
    the outer loops' assignments move into it.

    ## When it is valid
    The sum is the same sum in another order. Required: a `for` over `range(stop)`, `range(start,
    stop)` or `range(start, stop, 1)` whose body holds only assignments of temporaries and additions
    into accumulators (`acc += e`, `acc = acc + e`); each accumulator bound to a number just before
    the loop in the same block and read in the loop only by its own addition; temporaries not read
    after the loop; no store, atomic, branch, nested loop, `break`/`continue`, reduction or call of
    another function in the body; every load in it reads one scalar (no `tl.arange`); the loop's
    start and stop not assigned in it. In a nest, each outer loop holds only assignments before the
    loop nested last in it, and no loop's bounds read an outer loop's index or assignments (a
    triangular nest is declined). Guards are kept as lane masks: `if C: continue` anywhere in the
    nest narrows a `valid` mask for what follows (`valid = valid & (0 <= ih) & (ih < H)`), and `if
    C:` in the innermost loop whose body only assigns temporaries and adds into accumulators masks
    its loads and additions; `C` made of comparisons (chained ones too), `and`/`or`/`not` and flags.

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
            lambda p: (
                f"a loop over {', '.join(level.index for level in p.levels)} sums scalar loads into {', '.join(n for _, n in p.accumulators)}"
            ),
            "no kernel sums one scalar load per loop iteration",
        )

    def transform(self, ctx: RewriteContext, plan: LoopPlan) -> str:
        taken = names(plan.kernel.node) | set(plan.kernel.params)
        width = plan.width
        if len(plan.levels) == 1:
            (level,) = plan.levels
            flat, count, bounds = level.index, level.stop, []
            step = unique_name(taken, f"{flat}0")
            head = [f"{flat} = {step} + tl.arange(0, {width})"]
            loop_range = f"range({level.start}, {level.stop}, {width})"
            what = f"{width} iterations per step"
        else:
            flat = unique_name(taken, "".join(level.index for level in plan.levels))
            step = unique_name(taken | {flat}, f"{flat}0")
            bounds, spans, count = flattened(plan.levels, taken | {flat, step}, flat)
            head = [f"{flat} = {step} + tl.arange(0, {width})", *spans]
            loop_range = f"range(0, {count}, {width})"
            what = f"the {', '.join(level.index for level in plan.levels)} loops as one, {width} iterations per step"
        lanes = f"{flat} < {count}"
        if plan.guarded:  # the guards narrow a mask of the lanes, bound once and and-ed at each guard
            valid = unique_name(taken | {flat, step}, "valid")
            head.append(f"{valid} = {lanes}")
            lanes = valid
        zeros = {
            name: "0" if isinstance(simple_assignment(b)[1], cst.Integer) else "0.0" for b, name in plan.accumulators
        }
        lines = []
        for line in [*plan.prelude, *plan.body]:
            skip = skip_guard(line)
            only = _only_guard(line)
            if skip is not None:
                keep = " & ".join(lane_terms(skip, negate=True))
                lines.append(statement(f"{lanes} = {lanes} & {keep}\n").with_changes(leading_lines=line.leading_lines))
            elif only is not None:
                where = unique_name(taken | {flat, step, lanes}, "branch")
                terms = " & ".join(lane_terms(only[0]))
                lines.append(statement(f"{where} = {lanes} & {terms}\n").with_changes(leading_lines=line.leading_lines))
                lines.extend(_kept(inner, where, zeros) for inner in line.body.body)
            else:
                lines.append(_kept(line, lanes, zeros))
        comment = cst.EmptyLine(comment=cst.Comment(f"# {what} as one block load, summed once after the loop"))
        before = statements("\n".join(bounds)) if bounds else []
        if before:  # the loop's blank lines and comments go above the bindings of its bounds
            before[0] = before[0].with_changes(leading_lines=plan.loop.leading_lines)
        loop = plan.loop.with_changes(
            target=cst.Name(step),
            iter=cst.parse_expression(loop_range),
            body=plan.loop.body.with_changes(body=[*statements("\n".join(head)), *lines]),
            leading_lines=[comment] if before else [*plan.loop.leading_lines, comment],
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
        mapping[plan.loop] = cst.FlattenSentinel([*before, loop, *statements("\n".join(totals))])
        return replace(ctx.module, mapping).code


def _kept(line: cst.BaseStatement, lanes: str, zeros: dict[str, str]) -> cst.BaseStatement:
    """`line` with its loads masked to `lanes`, and its addition (if it is one) kept only there."""
    mask = cst.parse_expression(lanes)
    line = replace(line, {n: _masked_load(n, mask) for n in walk(line) if is_tl_call(n, "load")})
    small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    target = _accumulated(small) if small is not None else None
    if target not in zeros:
        return line
    sign = "-" if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.SubtractAssign) else "+"
    kept = f"tl.where({lanes}, {code(_addend(small))}, {zeros[target]})"
    return statement(f"{target} {sign}= {kept}\n").with_changes(leading_lines=line.leading_lines)


def _only_guard(line: cst.CSTNode) -> tuple[cst.BaseExpression, list[str], set[str]] | None:
    """(`C`, accumulators, temporaries) of `if C:` (no else) whose body only assigns temporaries and
    adds into accumulators."""
    if not (isinstance(line, cst.If) and line.orelse is None and isinstance(line.body, cst.IndentedBlock)):
        return None
    targets, temporaries = [], set()
    for inner in line.body.body:
        small = inner.body[0] if isinstance(inner, cst.SimpleStatementLine) and len(inner.body) == 1 else None
        target = _accumulated(small) if small is not None else None
        if target is not None:
            targets.append(target)
            continue
        name, value = simple_assignment(inner)
        if name is None or value is None:
            return None
        temporaries.add(name)
    return line.test, targets, temporaries


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
    """The plan for `loop` (with the loops nested in it), at `position` in `block`; `blocks` are the
    kernel's names bound to blocks."""
    loads = [c for c in walk(loop.body) if is_tl_call(c, "load")]
    if not loads or not isinstance(loop.target, cst.Name):
        return None
    if any(c.args and names(c.args[0].value) & blocks for c in loads) or calls(loop.body, "arange"):
        return None  # it loads blocks already: not a loop of scalar loads
    found = nest(loop)
    if isinstance(found, str):
        return found
    levels, prelude, body = found
    index = ", ".join(level.index for level in levels)
    accumulated: list[str] = []
    temporaries: set[str] = set()
    guarded = False
    inside: set[int] = set()  # nodes of guarded bodies
    guarded_names: set[str] = set()  # what they bind
    checked: list[cst.CSTNode] = []  # what the loop computes, guards' `continue` aside
    for line in [*prelude, *body]:
        skip = skip_guard(line)
        only = _only_guard(line) if any(line is b for b in body) else None
        if skip is not None or only is not None:
            condition = skip if skip is not None else only[0]
            if lane_terms(condition) is None:
                return f"the loop over {index} branches on `{code(condition)}`, not a comparison"
            guarded = True
            checked.append(condition)
            if only is not None:
                accumulated.extend(only[1])
                temporaries |= only[2]
                guarded_names |= only[2]
                inside.update(id(n) for n in walk(line.body))
                for inner in line.body.body:
                    checked.append(_addend(inner.body[0]) if _accumulated(inner.body[0]) else inner)
            continue
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            return f"the loop over {index} holds a compound statement"
        small = line.body[0]
        target = _accumulated(small)
        if target is not None and any(line is b for b in body):
            accumulated.append(target)
            checked.append(_addend(small))
            continue
        name, value = simple_assignment(line)
        if name is None or value is None:
            return f"the loop over {index} holds `{code(small)}`"
        temporaries.add(name)
        checked.append(line)
    if not accumulated:
        return None
    for line in [*prelude, *body]:
        outside = [n for n in walk(line) if id(n) not in inside and isinstance(n, cst.Name)]
        if any(n.value in guarded_names for n in outside):
            return f"a name the loop over {index} binds under a branch is read outside it"
    for node in (n for part in checked for n in walk(part)):
        if isinstance(node, cst.Call):
            name = tl_name(node.func)
            if name in REDUCTIONS or name in EFFECTS or name == "arange":
                return f"the loop over {index} calls tl.{name}"
            if name is None and not _method_call(node):
                return f"the loop over {index} calls {code(node.func)}"
        if isinstance(node, (cst.Break, cst.Continue, cst.Return)):
            return f"the loop over {index} leaves early"
    indices = {level.index for level in levels}
    if not any(c.args and names(c.args[0].value) & (indices | temporaries) for c in loads):
        return f"no load of the loop over {index} reads at {index}"
    outer: set[str] = set()
    for level in levels:
        bound = names(cst.parse_expression(level.start)) | names(cst.parse_expression(level.stop))
        if bound & (temporaries | set(accumulated)):
            return f"the loop over {level.index} assigns its own bounds"
        if bound & outer:
            return f"the bounds of the loop over {level.index} change with an outer loop (not a rectangular nest)"
        outer.add(level.index)
    accumulators = []
    for name in dict.fromkeys(accumulated):
        binding = next(
            (s for s in reversed(block.body[:position]) if simple_assignment(s)[0] == name or name in names(s)),
            None,
        )
        if binding is None or simple_assignment(binding)[0] != name or not is_number(simple_assignment(binding)[1]):
            return f"{name} is not bound to a number just before the loop over {index}"
        reads = [n for part in checked for n in walk(part) if isinstance(n, cst.Name) and n.value == name]
        if reads:
            return f"the loop over {index} reads {name} besides adding to it"
        accumulators.append((binding, name))
    after = block.body[position + 1 :]
    if any(names(s) & (temporaries | indices) for s in after):
        return f"a temporary of the loop over {index} is read after it"
    counts = [
        (int_value(cst.parse_expression(level.start)), int_value(cst.parse_expression(level.stop))) for level in levels
    ]
    if all(begin is not None and end is not None for begin, end in counts):
        count = math.prod(max(0, end - begin) for begin, end in counts)
        width = 1 << max(0, count - 1).bit_length() if count <= SMALL else BLOCK
    else:
        width = BLOCK
    return LoopPlan(
        kernel, loop, block, tuple(levels), tuple(prelude), tuple(body), tuple(accumulators), width, guarded
    )


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
