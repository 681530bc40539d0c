from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import pointer_of

MIN_LAUNCHES = 3


class UnfusedElementwiseLaunches(Rule):
    """## What it finds
    Three or more elementwise kernels launched one after another from the same launcher or
    `ModelNew.forward`.

    ## Why it is slow
    Each elementwise kernel reads its inputs from memory and writes its output back, and the next
    one reads that output again. Fused into one kernel the intermediates stay in registers: for a
    chain of k memory-bound ops the traffic drops by roughly a factor of k, and k-1 launch latencies
    disappear.

    ## Example
    ```python
    scale_kernel[grid](x, t1, n, BLOCK=1024)
    bias_kernel[grid](t1, b, t2, n, BLOCK=1024)
    relu_kernel[grid](t2, out, n, BLOCK=1024)
    ```

    ## Use instead
    ```python
    scale_bias_relu_kernel[grid](x, b, out, n, BLOCK=1024)
    ```

    ## Known false positives
    Measured on 19 findings (FlagGems), none of them a fusible elementwise chain. Now accepted:
    multi-stage algorithms whose kernels only looked elementwise because the work is in loops,
    atomics, scans, gathers/scatters or `@triton.jit` helpers (unique's local/global/output
    stages, MoE align's count/cumsum/place stages, embedding backward's histogram and scatter):
    a kernel counts only if it is straight-line per-element work at block offsets, and so do the
    helpers it calls. Launches in different branches (`if scale_grad_by_freq:`) no longer form a
    sequence, and launches must be linked by a tensor one passes and the next takes. Still
    misread: none known; a chain whose link goes through a view made between launches
    (`t = a.view(...)`) is not seen.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 01-vector-add; KernelBench level-2 fusion tasks.
    """

    code = "TRI011"
    name = "unfused-elementwise-launches"
    message = "{n} elementwise kernels launched in sequence in `{function}`; each round-trips its data through memory"
    fix_title = "Fuse the elementwise kernels into one"

    def check(self, ctx):
        for fn in ctx.hot_functions:
            parent = {child: node for node in ast.walk(fn.node) for child in ast.iter_child_nodes(node)}
            blocks: dict[int, list] = {}
            for launch in fn.launches:
                if launch.loop is None and _pure_elementwise(ctx, ctx.kernels[launch.kernel]):
                    blocks.setdefault(id(_block(launch.node, parent, fn.node)), []).append(launch)
            for launches in blocks.values():
                chain = _longest_dataflow_chain(ctx, launches)
                if len(chain) >= MIN_LAUNCHES:
                    third = chain[MIN_LAUNCHES - 1]
                    others = [launch.node for launch in chain if launch is not third]
                    yield self.hit(third.node, secondary=others, n=len(chain), function=fn.node.name)


def _pure_elementwise(ctx, kernel, depth: int = 0) -> bool:
    """Straight-line per-element work: no dot, reduction or 2-D tile, no loop, no atomic, and every
    access at block offsets that are not themselves loaded (no gather or scatter); the same for
    the `@triton.jit` helpers it calls."""
    helpers = {
        n.func.id
        for n in ast.walk(kernel.node)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ctx.kernels
        and n.func.id != kernel.name
    }
    if depth > 3 or not all(_pure_elementwise(ctx, ctx.kernels[h], depth + 1) for h in helpers):
        return False
    if (
        not kernel.is_elementwise
        or kernel.loops
        or any(
            kernel.calls(n)
            for n in (
                "atomic_add",
                "atomic_max",
                "atomic_min",
                "atomic_cas",
                "atomic_xchg",
                "atomic_or",
                "atomic_and",
                "debug_barrier",
            )
        )
    ):
        return False
    data = kernel.loaded_names()
    for call in kernel.calls("load", "store"):
        ptr = pointer_of(call)
        if ptr is None or not kernel.is_block(ptr) or kernel.sources(ptr) & data:
            return False
    return True


def _block(node, parent, fn) -> ast.AST:
    """The statement block a launch sits in: the function body, or the branch / `try` around it
    (`with` blocks are transparent)."""
    while node in parent and node is not fn:
        node = parent[node]
        if isinstance(node, (ast.If, ast.Try, ast.For, ast.While, ast.FunctionDef)):
            return node
    return fn


def _pointer_params(kernel) -> set[str]:
    """Parameters used as the base of a load/store address (not offsets, sizes or constexprs)."""
    out: set[str] = set()
    bounds = {
        n.id
        for node in ast.walk(kernel.node)
        if isinstance(node, ast.Compare)
        for c in node.comparators
        for n in ast.walk(c)
        if isinstance(n, ast.Name)
    }
    for call in kernel.calls("load", "store"):
        ptr = pointer_of(call)
        if ptr is not None:
            out |= kernel.sources(ptr) & set(kernel.params)
    return out - kernel.constexprs - kernel.block_names - bounds


def _tensor_args(ctx, launch) -> set[str]:
    kernel = ctx.kernels[launch.kernel]
    pointers = _pointer_params(kernel)
    out = set()
    for param, arg in launch.arg_nodes(kernel.params).items():
        while isinstance(arg, (ast.Subscript, ast.Attribute, ast.Call)) and param in pointers:
            arg = arg.value if not isinstance(arg, ast.Call) else arg.func  # x[b], x.view(-1)
        if param in pointers and isinstance(arg, ast.Name):
            out.add(arg.id)
    return out


def _longest_dataflow_chain(ctx, launches: list) -> list:
    """The largest group of launches linked by a tensor one passes and another takes (the first's
    output read back by the next); unrelated launches in a row are not a fusion chain."""
    names = [_tensor_args(ctx, launch) for launch in launches]
    group = list(range(len(launches)))

    def root(i):
        while group[i] != i:
            i = group[i]
        return i

    for i in range(len(launches)):
        for j in range(i):
            if names[i] & names[j]:
                group[root(i)] = root(j)
    best: dict[int, list] = {}
    for i, launch in enumerate(launches):
        best.setdefault(root(i), []).append(launch)
    return max(best.values(), key=len, default=[])
