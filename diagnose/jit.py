"""Which decorator makes a Triton kernel: one predicate over the decorator's dotted name.

Task loading, triage, the rewrites and the LLM proposer all ask it, each after turning its own
syntax tree's decorator into a dotted name (`triton.jit`, `tl.jit`, a bare `jit` imported from
triton; a call such as `@triton.jit(do_not_specialize=...)` is named by what it calls). A function
may also be made a kernel by assignment after its definition (`_rope = triton.jit(_rope)`, then
`_rope = triton.heuristics({...})(_rope)`: unsloth's style); `wrapped_by_assignment` finds those
wrappers, and `decorators_of` lists them with the function's own decorators.

A launch may pass the kernel through a wrapper first: `wrap_triton(kernel)[grid](...)` (PyTorch's
`torch.library.wrap_triton`, for a kernel launched inside a `@triton_op` custom op that `torch.compile`
traces; `capture_triton` is its older name). In eager mode the wrapper launches the kernel as it is;
`is_kernel_wrapper` names the call that launch sites look through.

    >>> [is_triton_jit(n) for n in ("triton.jit", "jit", "triton.language.jit", "numba.jit", "torch.jit.script")]
    [True, True, True, False, False]
    >>> [is_kernel_wrapper(n) for n in ("wrap_triton", "torch.library.wrap_triton", "capture_triton", "wrap")]
    [True, True, True, False]
"""

from __future__ import annotations

import ast

# Other compilers' `jit` decorators, by the first part of their dotted name; they sit beside Triton's
# in the same projects (Liger-Kernel's `ops/cutedsl/`).
OTHER_JITS = frozenset(
    {"cute", "cutlass", "numba", "nb", "jax", "torch", "warp", "wp", "taichi", "ti", "tilelang", "mlx"}
)


def is_triton_jit(name: str | None) -> bool:
    """Whether a decorator called `name` (dotted, without a call's arguments) makes a Triton kernel."""
    if not name or name.split(".")[0] in OTHER_JITS:
        return False
    return name == "jit" or name.endswith(".jit")


# What PyTorch calls to pass a kernel to a launch (`torch.library.wrap_triton`, before 2.6 `capture_triton`).
KERNEL_WRAPPERS = frozenset({"wrap_triton", "capture_triton"})


def is_kernel_wrapper(name: str | None) -> bool:
    """Whether a call of `name` (dotted) passes the kernel it is given through to a launch: `wrap_triton(k)[grid](...)`."""
    return bool(name) and name.rsplit(".", 1)[-1] in KERNEL_WRAPPERS


def wrapped_by_assignment(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Module-level functions wrapped by assignment after their definition rather than decorated
    (unsloth's `_rope = triton.jit(_rope)`, then `_rope = triton.heuristics({...})(_rope)`): per function,
    the wrappers as the decorators they stand for, outermost first (the last assignment's first)."""
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    out: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if (
            name in defined
            and isinstance(value, ast.Call)
            and not value.keywords
            and len(value.args) == 1
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id == name
        ):
            out.setdefault(name, []).insert(0, value.func)
    return out


def decorators_of(node: ast.FunctionDef | ast.AsyncFunctionDef, wrapped: dict[str, list[ast.expr]]) -> list[ast.expr]:
    """A function's decorators, outermost first, those applied by assignment (`wrapped_by_assignment`) included."""
    return [*wrapped.get(node.name, []), *node.decorator_list]


def is_kernel(node: ast.AST, wrapped: dict[str, list[ast.expr]]) -> bool:
    """A function made a Triton kernel by `triton.jit`, as a decorator (`@triton.jit(...)` named by what
    it calls) or by assignment."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        is_triton_jit(ast.unparse(d.func if isinstance(d, ast.Call) else d)) for d in decorators_of(node, wrapped)
    )
