"""`and`, `or` and `not` in interpreted kernels, with the meaning the compiler gives them.

Triton's code generator turns `a and b`, `a or b` and `not a` on tensors into elementwise
`logical_and`, `logical_or` and `__not__` (deprecated for blocks, still compiled: FlagGems writes
`mask = offs_c[:, None] < C and offs_d[None, :] < D`), and short-circuits only on values that are not
tensors. Triton 3.6's interpreter runs the kernel's Python as written, and a block tensor is always
true there (`_get_bool`), so `a and b` is `b`: the first mask is dropped, loads read past the row, and
the kernel computes garbage that the compiled kernel never does. The rewriter here is the
interpreter's own (`FunctionRewriter`, whose `ast_transformer` is the seam) with those three rewritten
into calls of `bool_op` and `not_`, which apply the code generator's rules at run time. Interpreter
processes only (`interpreted_jit`).
"""

from __future__ import annotations

import ast
from typing import Any, Callable

from triton.runtime.interpreter import ASTTransformer, FunctionRewriter

MODULE = __name__


def _is_tensor(value: Any) -> bool:
    import triton.language as tl  # deferred: triton is heavy

    return isinstance(value, tl.tensor)


def bool_op(op: str, *operands: Callable[[], Any]) -> Any:
    """`and`/`or` over `operands` (thunks, evaluated in order), as `CodeGenerator.visit_BoolOp` does: a
    value that is not a tensor short-circuits (a false one for `and`, a true one for `or`) or drops
    out; the tensors are combined elementwise; with no tensor left, the last value is the result."""
    tensors, value = [], None
    for operand in operands:
        value = operand()
        if not _is_tensor(value):
            if bool(value) is (op == "or"):
                return value
            continue
        tensors.append(value)
    if not tensors:
        return value
    result = tensors[0]
    for tensor in tensors[1:]:
        result = result.logical_and(tensor) if op == "and" else result.logical_or(tensor)
    return result


def not_(value: Any) -> Any:
    """`not value`, as `CodeGenerator.visit_UnaryOp` does: elementwise on a tensor."""
    return value.__not__() if _is_tensor(value) else not value


def _helper(name: str) -> ast.expr:
    """`__import__(MODULE, fromlist=["_"]).name`: reachable from the kernel's code without adding a name
    to the module the kernel was defined in."""
    module = ast.Call(
        func=ast.Name(id="__import__", ctx=ast.Load()),
        args=[ast.Constant(MODULE)],
        keywords=[ast.keyword(arg="fromlist", value=ast.List(elts=[ast.Constant("_")], ctx=ast.Load()))],
    )
    return ast.Attribute(value=module, attr=name, ctx=ast.Load())


class CompiledBoolOps(ASTTransformer):
    """The interpreter's transformer, plus `and`/`or`/`not` as the compiler reads them."""

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        self.generic_visit(node)  # the interpreter's own rewrite of an assignment does not look inside it
        return super().visit_Assign(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        self.generic_visit(node)
        thunks = [
            ast.Lambda(
                args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=value
            )
            for value in node.values
        ]
        op = "and" if isinstance(node.op, ast.And) else "or"
        return ast.copy_location(ast.Call(func=_helper("bool_op"), args=[ast.Constant(op), *thunks], keywords=[]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(ast.Call(func=_helper("not_"), args=[node.operand], keywords=[]), node)


class CompiledSemanticsRewriter(FunctionRewriter):
    """The interpreter's rewriter of a kernel's source, with `CompiledBoolOps`."""

    ast_transformer = CompiledBoolOps()
