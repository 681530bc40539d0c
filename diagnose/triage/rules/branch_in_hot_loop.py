from __future__ import annotations

import ast

from diagnose.triage.context import Context
from diagnose.triage.kernel import TL, Kernel
from diagnose.triage.rule import Rule

# Attributes that are known when the kernel is compiled: dtypes and shapes of values.
STATIC_ATTRS = {
    "dtype",
    "type",
    "element_ty",
    "shape",
    "numel",
    "primitive_bitwidth",
    "scalar",
    "fp_mantissa_width",
    "T",
}
STATIC_CALLS = {
    "isinstance",
    "len",
    "hasattr",
    "getattr",
    "type",
    "str",
    "int",
    "float",
    "bool",
    TL + "constexpr",
    TL + "static_assert",
}
# Statements that keep an `if` a real branch: nothing to turn into masked ops.
MEMORY_WRITES = {
    TL + n
    for n in (
        "store",
        "atomic_add",
        "atomic_max",
        "atomic_min",
        "atomic_and",
        "atomic_or",
        "atomic_xor",
        "atomic_xchg",
        "atomic_cas",
        "debug_barrier",
    )
}


def compile_time_names(kernel: Kernel, ctx: Context) -> set[str]:
    """Names whose values are fixed when the kernel is compiled: constexpr parameters (also when the
    annotation is the string "tl.constexpr"), module constants, locals annotated `tl.constexpr` or
    assigned only from compile-time expressions, and `tl.static_range` loop variables."""
    args = kernel.node.args
    names = set(kernel.constexprs) | set(ctx.constants)
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        if isinstance(a.annotation, ast.Constant) and "constexpr" in str(a.annotation.value):
            names.add(a.arg)
    params = set(kernel.params)
    for node in ast.walk(kernel.node):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and "constexpr" in ast.unparse(node.annotation)
        ):
            names.add(node.target.id)
        elif (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Call)
            and (kernel.qualname(node.iter.func) or "").endswith("static_range")
        ):
            names.add(node.target.id)
    changed = True
    while changed:
        changed = False
        for name, values in kernel.assigns.items():
            if name in names or name in params:
                continue
            if values and all(
                not isinstance(kernel.parent.get(v), ast.For) and is_compile_time(v, kernel, names) for v in values
            ):
                names.add(name)
                changed = True
    return names


def is_compile_time(expr: ast.AST, kernel: Kernel, names: set[str]) -> bool:
    """Whether `expr` is decided when the kernel is compiled: constants, compile-time names, `x is
    None` tests (None arguments are specialized), dtype and shape tests, `tl.constexpr(...)`."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.Name):
        return expr.id in names or expr.id in ("None", "True", "False")
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], (ast.Is, ast.IsNot)):
        return True  # `x is None`: Triton specializes None arguments
    if isinstance(expr, ast.Attribute):
        if expr.attr in STATIC_ATTRS or (kernel.qualname(expr) or "").startswith("triton.language."):
            return True
        return is_compile_time(expr.value, kernel, names)
    if isinstance(expr, ast.Call):
        name = kernel.qualname(expr.func) or ""
        if name in STATIC_CALLS or name.split(".")[-1] in ("constexpr",):
            return True
        if (
            isinstance(expr.func, ast.Attribute)
            and not name.startswith("triton.")
            and is_compile_time(expr.func.value, kernel, names)
        ):
            return all(is_compile_time(a, kernel, names) for a in expr.args)  # x.dtype.is_floating()
        return False
    if isinstance(
        expr, (ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Tuple, ast.List)
    ):
        return all(
            is_compile_time(c, kernel, names)
            for c in ast.iter_child_nodes(expr)
            if not isinstance(c, (ast.operator, ast.boolop, ast.unaryop, ast.cmpop, ast.expr_context))
        )
    if isinstance(expr, (ast.Slice,)):
        return all(is_compile_time(c, kernel, names) for c in ast.iter_child_nodes(expr))
    return False


def _updates_blocks(kernel: Kernel, branch: ast.If, ctx: Context) -> bool:
    """The branch assigns at least one block (tensor) of real work and is a candidate for
    if-conversion: no stores, atomics, block loads, loops, returns or breaks (in the branch or in a
    `@triton.jit` helper it calls), which keep it a real scalar-controlled branch that skips memory
    traffic."""
    statements = [n for s in branch.body + branch.orelse for n in ast.walk(s)]
    if any(isinstance(n, (ast.For, ast.While, ast.Return, ast.Break, ast.Continue)) for n in statements):
        return False
    if _touches_memory(kernel, statements, ctx, {kernel.name}):
        return False
    for n in statements:
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
            computed = [n.value] + ([n.target] if isinstance(n, ast.AugAssign) else [])
            if _element_of_block(n.value) or all(_index_only(kernel, c, set()) for c in computed):
                continue
            blocks = _blocks(kernel)
            if kernel.is_block(n.value, blocks) or names & blocks:
                return True
    return False


def _touches_memory(kernel: Kernel, nodes: list[ast.AST], ctx: Context, seen: set[str], helper: bool = False) -> bool:
    """A store, an atomic or a block load among `nodes`, or in a `@triton.jit` helper of this file
    they call (`ld_st(indices, ...)`, which gathers rows and stores them), followed into its callees.
    In a helper any load counts: its pointer may be a block passed in."""
    for n in nodes:
        if not isinstance(n, ast.Call):
            continue
        name = kernel.qualname(n.func) or (n.func.attr if isinstance(n.func, ast.Attribute) else "")
        last = name.rsplit(".", 1)[-1]
        if name in MEMORY_WRITES or last.endswith("store") or last.startswith("atomic_"):
            return True  # tl.store, desc.store(...), tl._experimental_descriptor_store, atomics
        if name == TL + "load" and (helper or n.args and kernel.is_block(n.args[0])):
            return True  # a guarded block load: the branch skips a DMA
        callee = ctx.kernels.get(n.func.id) if isinstance(n.func, ast.Name) else None
        if callee is not None and callee.name not in seen:
            seen.add(callee.name)
            if _touches_memory(callee, list(ast.walk(callee.node)), ctx, seen, helper=True):
                return True
    return False


def _blocks(kernel: Kernel) -> frozenset[str]:
    """Kernel.block_names, except that one element taken out of a block (`x_vals[i]`) is a scalar."""
    return kernel.names_where(_holds_block)


def _holds_block(kernel: Kernel, value: ast.AST, blocks: set[str]) -> bool:
    return not _element_of_block(value) and kernel.is_block(value, blocks)


def _element_of_block(value: ast.AST) -> bool:
    """`x_vals[i]`: one element of a block, a scalar."""
    if not isinstance(value, ast.Subscript):
        return False
    elts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
    return not any(isinstance(e, ast.Slice) or isinstance(e, ast.Constant) and e.value is None for e in elts)


INDEX_CALLS = {
    TL + n
    for n in (
        "arange",
        "multiple_of",
        "max_contiguous",
        "program_id",
        "num_programs",
        "cdiv",
        "where",
        "minimum",
        "maximum",
    )
}


def _index_only(kernel: Kernel, value: ast.AST, seen: set[str]) -> bool:
    """`start_m + tl.arange(0, BLOCK_M)`: index blocks from ranges and scalars, cheap to recompute
    (a persistent loop's new tile offsets)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            if kernel.qualname(node.func) not in INDEX_CALLS:
                return False
        elif isinstance(node, ast.Name) and node.id in _blocks(kernel) and node.id not in seen:
            seen.add(node.id)
            if not all(_index_only(kernel, v, seen) for v in kernel.assigns.get(node.id, ())):
                return False
    return True


class BranchInHotLoop(Rule):
    """## What it finds
    An `if` inside a kernel loop whose condition is decided at run time and whose branches update
    blocks (tensors) without storing, looping or leaving: the shape the compiler turns into masked
    work over whole blocks.

    ## Why it is slow
    The Ascend vector unit has no cheap divergent control flow inside a tiled loop: an `if` that
    updates loop-carried values is lowered to masked ops over whole blocks, or breaks the loop into
    scalar-controlled pieces that cannot be multibuffered. Constexpr branches
    are free: they are resolved at compile time and are not flagged.

    ## Example
    ```python
    for start in range(0, n, BLOCK):
        x = tl.load(p + start + cols, mask=start + cols < n, other=0.0)
        if start + BLOCK > n:
            x = x * scale
        acc += x
    ```

    ## Use instead
    ```python
    for start in range(0, n, BLOCK):
        x = tl.load(p + start + cols, mask=start + cols < n, other=0.0)
        acc += tl.where(start + cols + BLOCK > n, x * scale, x)
    ```
    or peel the special iteration out of the loop.

    ## Known false positives
    Measured on 25 labelled findings of Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (4 true, 18 false, 3 debatable before this section). Now accepted:
    - compile-time conditions: `x_ptr is None` / `is not None` (None arguments are specialized),
      dtype and shape tests (`c_ptr.dtype.element_ty == tl.float8e4nv`, `dtype.is_floating()`),
      `tl.constexpr(...)`, locals annotated `tl.constexpr` or computed only from constexprs,
      parameters annotated with the string `"tl.constexpr"`, `tl.static_range` loop variables;
    - branches that only update scalars (tile ids in a persistent loop, a scalar coefficient, a
      counter): a scalar branch on the scalar unit, nothing to mask;
    - skip guards and epilogues whose branch stores, loads a block, loops, returns or breaks
      (`if should_process != 0:` around a row's work, `if i < n_blocks:` around a load in a
      `tl.static_range` loop, `if k == last: tl.store(...)`): they stay real branches and the
      alternative would do the skipped work or memory traffic;
    - branches that only recompute index blocks from ranges and scalars (a persistent loop's new
      tile offsets `start_m + tl.arange(0, BLOCK_M)`), or take one element out of a block.
    After the held-out labels (2026-12, 8 findings: 1 true, 3 false, 4 debatable), also accepted:
    branches whose arms call a `@triton.jit` helper of the same file that stores, does atomics or
    loads (directly or through its own helpers: FlagGems' Cambricon `ld_st_1(indices, ...)` under a
    dtype test). Helpers imported from another module stay opaque, so such a branch is still flagged.
    After a second held-out round (2026-12), also accepted: a loop that loads and stores nothing (no
    block load, store or atomic, nor a same-file helper that does): register arithmetic such as
    square-and-multiply on a scalar exponent (`while n > 0: if n % 2 == 1: result = result * tmp`) has no
    memory stream to multibuffer, and a `tl.where` would do the same multiply every step.
    Still flagged although harmless: a runtime condition that is always true (`if i_k >= 0:`), and a loop-invariant condition
    (`if i_v == 0:` with a program id) that the compiler may unswitch.

    ## Targets
    ascend.

    ## References
    skills.sh ascend/agent-skills, triton-operator-performance-optim.
    """

    code = "ASC010"
    name = "branch-in-hot-loop"
    message = "runtime `if` inside a kernel loop updates blocks; it becomes masked or scalar code on the NPU"
    fix_title = "Use tl.where, a constexpr condition, or peel the iteration out of the loop"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if not kernel.loops:
                continue
            compile_time = compile_time_names(kernel, ctx)
            for loop in kernel.loops:
                if not _touches_memory(kernel, list(ast.walk(loop)), ctx, {kernel.name}):
                    continue  # a loop of register arithmetic (square-and-multiply): no stream to pipeline
                for node in ast.walk(loop):
                    if not isinstance(node, ast.If) or kernel.enclosing_loop(node) is not loop:
                        continue
                    if is_compile_time(node.test, kernel, compile_time):
                        continue
                    if _updates_blocks(kernel, node, ctx):
                        yield self.hit(node.test)
