from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import MEMORY_ACCESSES, pointer_of

# Elementwise torch ops a kernel's store could apply (the rewrite fuse-host-epilogue moves these;
# a test holds the two lists equal).
ELEMENTWISE = frozenset(
    {
        "sigmoid", "relu", "relu6", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "negative",
        "square", "silu", "gelu", "leaky_relu", "hardtanh", "clamp", "clip", "mul", "multiply", "add",
        "sub", "subtract", "div", "divide",
    }
)  # fmt: skip
NAMESPACES = {"torch", "F", "torch.nn.functional", "nn.functional", "torch.special"}
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


class HostEpilogueAfterLaunch(Rule):
    """## What it finds
    An elementwise PyTorch op applied by the host to a tensor a kernel launch has just written: the
    first statement after the launch that names the kernel's output applies `torch.sigmoid(out)`,
    `F.relu(out)`, `out.tanh_()`, `out * 0.5`, `out.clamp(min=0)` and the like to it (in a launcher,
    an autograd `forward`, `ModelNew.forward`).

    ## Why it is slow
    The op is one more kernel that reads and writes the whole output: for an elementwise or matmul
    output it doubles the traffic of the store, for a small output (a GEMV, a reduction) it adds a
    launch's latency. Applied to the value before the kernel's `tl.store`, it costs a few
    instructions on data already in registers. First versions leave epilogues to PyTorch often.

    ## Example
    ```python
    out = torch.empty(M, device=a.device)
    gemv_kernel[grid](a, x, out, M, K, BLOCK_M=32)
    return torch.sigmoid(out)
    ```

    ## Use instead
    ```python
    tl.store(out_ptr + rows, tl.sigmoid(acc), mask=rows < M)   # in the kernel
    return out
    ```

    ## Known false positives
    An op whose other operand is a tensor (a bias add) is flagged only when that tensor is a number
    literal: a tensor operand would need one more pointer and the same indexing in the kernel, which
    is often worth it but not always possible. Not flagged: ops on a tensor the kernel also reads
    (in-place kernels), casts (`out.to(x.dtype)`), reshapes and reductions.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 03-matrix-multiplication (`leaky_relu` fused into the matmul's store); PyTorch
    Inductor's epilogue fusion.
    """

    code = "TRI030"
    name = "host-epilogue-after-launch"
    message = "`{op}` on `{tensor}`, which `{kernel}` just wrote, passes over it once more; apply it before the store"
    fix_title = "Apply the op to the value the kernel stores"

    def check(self, ctx):
        written_by = {name: _written(kernel) for name, kernel in ctx.kernels.items()}
        for fn in ctx.functions:
            for launch in fn.launches:
                kernel = ctx.kernels[launch.kernel]
                written = written_by[launch.kernel]
                after = _after(fn.node, launch.node)
                for param, arg in launch.arg_nodes(kernel.params).items():
                    if param not in written or not isinstance(arg, ast.Name):
                        continue
                    user = next((s for s in after if any(_is(n, arg.id) for n in ast.walk(s))), None)
                    simple = isinstance(user, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr))
                    op = _op_on(user, arg.id) if simple else None
                    if op is not None:
                        yield self.hit(op[0], op=op[1], tensor=arg.id, kernel=launch.kernel)


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _written(kernel) -> set[str]:
    """Pointer parameters the kernel stores through and never loads or updates atomically."""
    stored: set[str] = set()
    read: set[str] = set()
    for call in kernel.calls(*MEMORY_ACCESSES):
        pointer = pointer_of(call)
        if pointer is not None:
            (stored if call.func.attr == "store" else read).update(_bases(kernel, pointer))
    return stored - read


def _bases(kernel, pointer: ast.AST, depth: int = 0) -> set[str]:
    """The parameters a pointer is based on: the leftmost term of `base + offsets`, through local names
    (`row_ptr = out_ptr + row * stride`), not the sizes and strides of its offsets."""
    while isinstance(pointer, ast.BinOp) and isinstance(pointer.op, (ast.Add, ast.Sub)):
        pointer = pointer.left
    if not isinstance(pointer, ast.Name):
        return set()
    if pointer.id in kernel.params:
        return {pointer.id}
    if depth > 8:
        return set()
    return set().union(*(_bases(kernel, value, depth + 1) for value in kernel.assigns.get(pointer.id, [])))


def _after(function: ast.FunctionDef, launch: ast.Call) -> list[ast.stmt]:
    """The statements after the launch's statement in its block."""
    for node in ast.walk(function):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if isinstance(stmt, ast.stmt) and any(n is launch for n in ast.walk(stmt)):
                    if not isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
                        return block[i + 1 :]
    return []


def _op_on(stmt: ast.stmt, tensor: str) -> tuple[ast.AST, str] | None:
    """The first elementwise op applied to `tensor` directly in `stmt`: (its node, its name)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            op = node.func.attr.removesuffix("_")
            if op not in ELEMENTWISE:
                continue
            receiver = node.func.value
            literal = all(_number(k.value) or k.arg == "approximate" for k in node.keywords)
            if _is(receiver, tensor):
                if literal and all(_number(a) for a in node.args):
                    return node, f".{node.func.attr}()"
            elif ast.unparse(receiver) in NAMESPACES and node.args and _is(node.args[0], tensor):
                if literal and all(_number(a) for a in node.args[1:]):
                    return node, f"{ast.unparse(node.func)}"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ARITHMETIC):
            if (_is(node.left, tensor) and _number(node.right)) or (_is(node.right, tensor) and _number(node.left)):
                return node, ast.unparse(node)
    return None


def _number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
