from __future__ import annotations

import ast
import math

from diagnose.triage.kernel import Kernel
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import MEMORY_ACCESSES, pointer_of


class SingleProgramGrid(Rule):
    """## What it finds
    A launch whose grid is a single program (`(1,)`, or evaluating to 1 for every input group) of a
    kernel that loops over its data. A loop is a run-time loop with a load in it (a `tl.static_range`
    tree over one block is not), and not when every buffer the loop reads was written by a kernel
    launched earlier in the same host function: that is the combine stage of a multi-kernel
    reduction, the second pass this rule recommends.

    ## Why it is slow
    One program runs on one SM (one AI core on Ascend) and the other 131 of an H100 idle: the loop
    inside does serially what the grid would do in parallel. Split the loop across programs, with a
    second small pass to combine partial results if the kernel reduces.

    ## Example
    ```python
    sum_kernel[(1,)](x, out, n, BLOCK=1024)      # for start in range(0, n, BLOCK): ...
    ```

    ## Use instead
    ```python
    sum_kernel[(triton.cdiv(n, BLOCK),)](x, partials, n, BLOCK=1024)
    ```

    ## Known false positives
    Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (all 22 findings, all in
    FlagGems, plus 3 on the Ascend target: 2 true, 10 false, 13 debatable). Now accepted: the second
    stage of two-stage reductions (`std`, `dot`, vector norms: one program adds the partials a grid
    launch wrote just before), the final sum of per-row losses after a cross-entropy kernel, including
    when the weighted branch that would read another buffer is compiled out by a constexpr flag
    (`if WEIGHTED:` with `False` passed, `p is None` with `None`); a serial prefix sum over the
    per-expert counts earlier stages wrote (MoE block alignment); combine kernels whose only loop is
    a `tl.static_range` tree over one register block. Still reported: a single program over a
    buffer the same function did not produce by a launch (the user's input, a `torch` result), which
    is right for a large input (a `trace` over the diagonal) but costs little for a small one.
    Conversely, a later stage that serially walks the full, unreduced output of an earlier kernel is
    now accepted too.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 01-vector-add (grids); triton-ascend programming guide, "Setting the Maximum
    Number of Hardware Cores" (grid = physical cores).
    """

    code = "TRI026"
    name = "single-program-grid"
    message = "`{kernel}` is launched with a single program; one core does the whole loop"
    fix_title = "Spread the loop over a grid of programs"
    confidence = "high"

    def check(self, ctx):
        for launch in ctx.launches:
            kernel = ctx.kernels[launch.kernel]
            variants = [v for v in ctx.variants(kernel) if v.launch is launch]
            loads = [
                load
                for load in kernel.calls("load")
                if any(_runtime_loop(kernel, a) for a in kernel.ancestors(load))
                and not (variants and all(_compiled_out(kernel, load, v.values) for v in variants))
            ]
            if not loads:
                continue  # no loop reads memory (a `tl.static_range` tree over one block is no loop)
            grids = [v.grid for v in variants]
            if grids and all(g is not None and math.prod(g) == 1 for g in grids):
                if _combines_earlier_launch(ctx, kernel, launch, loads):
                    continue  # the combine stage of a multi-kernel reduction: its input is already reduced
                yield self.hit(launch.grid, kernel=kernel.name)


WRITES = tuple(n for n in MEMORY_ACCESSES if n != "load")


def _runtime_loop(kernel: Kernel, node: ast.AST) -> bool:
    """A loop that runs at run time: `while`, or `for` over anything but `tl.static_range`."""
    if isinstance(node, ast.While):
        return True
    if not isinstance(node, ast.For):
        return False
    it = node.iter
    return not (isinstance(it, ast.Call) and (kernel.qualname(it.func) or "").endswith("static_range"))


def _known_truth(test: ast.AST, values: dict) -> bool | None:
    """The truth of an `if` test over the launch's compile-time values (`FLAG`, `not FLAG`,
    `p is None`, `p is not None`); None when it is not known."""
    if isinstance(test, ast.Name) and test.id in values:
        return bool(values[test.id])
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _known_truth(test.operand, values)
        return None if inner is None else not inner
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.left, ast.Name)
        and test.left.id in values
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        same = values[test.left.id] is None
        return same if isinstance(test.ops[0], ast.Is) else not same
    return None


def _compiled_out(kernel: Kernel, node: ast.AST, values: dict) -> bool:
    """Whether `node` lies in a branch of an `if` that these compile-time values do not take."""
    child = node
    for parent in kernel.ancestors(node):
        if isinstance(parent, ast.If):
            truth = _known_truth(parent.test, values)
            if truth is not None and any(s is child for s in (parent.orelse if truth else parent.body)):
                return True
        child = parent
    return False


def _pointer_params(kernel: Kernel, expr: ast.AST, seen: set[str] | None = None) -> set[str]:
    """The parameters a pointer expression is based on: names reached through `+`, `-`, subscripts
    and assignments, not through products (strides, row offsets) or calls (loop ranges)."""
    seen = set() if seen is None else seen
    if isinstance(expr, ast.Name):
        if expr.id in seen:
            return set()
        seen.add(expr.id)
        out = {expr.id} if expr.id in kernel.params else set()
        for value in kernel.assigns.get(expr.id, ()):
            out |= _pointer_params(kernel, value, seen)
        return out
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        return _pointer_params(kernel, expr.left, seen) | _pointer_params(kernel, expr.right, seen)
    if isinstance(expr, ast.Subscript):
        return _pointer_params(kernel, expr.value, seen)
    if isinstance(expr, ast.IfExp):
        return _pointer_params(kernel, expr.body, seen) | _pointer_params(kernel, expr.orelse, seen)
    return set()


def _host_name(expr: ast.AST | None) -> str | None:
    """The host variable an argument passes: `buf`, `buf.view(-1)`, `buf[0]`, `buf.data` -> `buf`."""
    while True:
        if isinstance(expr, ast.Name):
            return expr.id
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func.value
        elif isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        else:
            return None


def _combines_earlier_launch(ctx, kernel: Kernel, launch, loads: list[ast.Call]) -> bool:
    """Every buffer the kernel's loops read was written by a kernel launched before it in the same
    host function: partial sums, per-row results, counts. The single program is the second stage
    the rule itself recommends, not the first."""
    if launch.function is None:
        return False
    read = set().union(*(_pointer_params(kernel, pointer_of(load)) for load in loads if pointer_of(load)))
    passed = launch.arg_nodes(kernel.params)
    buffers = {_host_name(passed.get(p)) for p in read}
    if not read or None in buffers:
        return False
    written: set[str] = set()
    for other in ctx.launches:
        if other.function is not launch.function or other is launch or other.kernel not in ctx.kernels:
            continue
        if (other.node.lineno, other.node.col_offset) >= (launch.node.lineno, launch.node.col_offset):
            continue
        producer = ctx.kernels[other.kernel]
        stored = set().union(
            *(_pointer_params(producer, pointer_of(c)) for c in producer.calls(*WRITES) if pointer_of(c) is not None)
        )
        args = other.arg_nodes(producer.params)
        written |= {_host_name(args.get(p)) for p in stored} - {None}
    return buffers <= written
