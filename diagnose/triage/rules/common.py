"""Predicates several rules share: known values of sizes, tile dimensions, pointer arguments."""

from __future__ import annotations

import ast
import re
from typing import Any, Iterator

from diagnose import blocks
from diagnose.blocks import arange_bounds
from diagnose.triage.context import Context, HostFunction, Variant
from diagnose.triage.kernel import Kernel

# Tile dimension names as Triton code spells them: BLOCK_M, BLOCK_SIZE_M, BM, TILE_M, ...
DIM_NAME = {d: re.compile(rf"^(BLOCK|TILE)(_SIZE)?_{d}$|^B{d}$") for d in "MNK"}


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def value_of(expr: ast.AST | None, ctx: Context, variant: Variant | None = None) -> int | None:
    """An int an expression is known to have in `variant` (literals, constexprs, module constants)."""
    if isinstance(expr, ast.Constant):
        v = expr.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(expr, ast.Name):
        if variant is not None and variant.int(expr.id) is not None:
            return variant.int(expr.id)
        v = ctx.constants.get(expr.id)
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        a, b = value_of(expr.left, ctx, variant), value_of(expr.right, ctx, variant)
        if a is None or b is None or (isinstance(expr.op, ast.FloorDiv) and b == 0):
            return None
        op = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}
        return op[type(expr.op)](a, b)
    return None


def arange_sizes(ctx: Context, kernel: Kernel, variant: Variant) -> list[tuple[int, ast.AST, str]]:
    """(size, where the size was written, its name) for every `tl.arange` of known size."""
    out = []
    for call in kernel.calls("arange"):
        start, end = arange_bounds(call)
        a, b = value_of(start, ctx, variant), value_of(end, ctx, variant)
        if a is not None and b is not None:
            named = isinstance(end, ast.Name)
            where = variant.where(end.id) if named else call
            out.append((b - a, where, end.id if named else "tl.arange"))
    return out


def dot_dims(kernel: Kernel) -> dict[str, str]:
    """{"M": "BLOCK_SIZE_M", ...}: the constexpr parameters that name the dot tile, if any."""
    out = {}
    for name in kernel.params:
        for dim, pattern in DIM_NAME.items():
            if pattern.match(name) and name in kernel.constexprs:
                out.setdefault(dim, name)
    return out


def pointer_of(call: ast.Call) -> ast.AST | None:
    """The pointer argument of tl.load / tl.store / tl.atomic_*."""
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "pointer"), None)


# Vendor Triton ports, as the folder names of multi-backend libraries (FlagGems' `runtime/backend/
# _ascend`, Liger's `ops/backends/_ascend`) and the PyTorch device plug-ins their files import.
VENDOR_FOLDERS = {"ascend": "ascend", "npu": "ascend", "cambricon": "cambricon", "mlu": "cambricon"}
VENDOR_MODULES = {"torch_npu": "ascend", "torch_mlu": "cambricon"}


def vendor_port(ctx: Context) -> str | None:
    """The non-GPU Triton port a file is written for ("ascend", "cambricon"), from a folder of its
    path (`_ascend/`, `npu/`, `_cambricon/`, `mlu/`) or an import of the device's PyTorch plug-in
    (`torch_npu`, `torch_mlu`); None for everything else. Its kernels are compiled by that port's
    compiler, whatever target triage was asked to check."""
    for part in re.split(r"[\\/]", ctx.path)[:-1]:
        port = VENDOR_FOLDERS.get(part.lower().lstrip("_"))
        if port:
            return port
    for dotted in ctx.names.values():
        port = VENDOR_MODULES.get(dotted.split(".")[0])
        if port:
            return port
    return None


def is_device_helper(ctx: Context, kernel: Kernel) -> bool:
    """A `@triton.jit` function used as a device function rather than launched: this file never
    launches it with `[grid]`, and it returns a value or another jit function here calls it. Its
    parameters take whatever the caller passes, constexprs included."""
    if ctx.launches_of(kernel):
        return False
    if any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(kernel.node)):
        return True
    return any(
        isinstance(c.func, ast.Name) and c.func.id == kernel.name
        for other in ctx.kernels.values()
        if other is not kernel
        for c in ast.walk(other.node)
        if isinstance(c, ast.Call)
    )


MEMORY_ACCESSES = (
    "load",
    "store",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_xchg",
    "atomic_cas",
)


def address_names(kernel: Kernel) -> frozenset[str]:
    """Names that flow (transitively, flow-insensitively) into the pointer argument of a memory
    access (`tl.load`, `tl.store`, `tl.atomic_*`): addresses and the offsets and strides they are
    built from, as opposed to the values loaded and stored."""
    cache = kernel.__dict__.setdefault("_address_names_cache", [])
    if not cache:
        names: set[str] = set()
        for call in kernel.calls(*MEMORY_ACCESSES):
            pointer = pointer_of(call)
            if pointer is not None:
                names |= kernel.sources(pointer)
        cache.append(frozenset(names))
    return cache[0]


def in_address(node: ast.AST, kernel: Kernel) -> bool:
    """Whether `node` computes part of an address: it lies in the pointer argument of a memory
    access, or in the value assigned to a name that flows into one (`address_names`). A product in
    the *value* stored (`x * p`) is not an address."""
    addresses = address_names(kernel)
    child = node
    for parent in kernel.ancestors(node):
        if isinstance(parent, ast.Call) and kernel.qualname(parent.func) in {
            "triton.language." + n for n in MEMORY_ACCESSES
        }:
            pointer = pointer_of(parent)
            return pointer is child or (isinstance(child, ast.keyword) and child.value is pointer)
        if isinstance(parent, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and child is parent.value:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return any(isinstance(n, ast.Name) and n.id in addresses for t in targets for n in ast.walk(t))
        if isinstance(parent, (ast.stmt, ast.FunctionDef)):
            return False
        child = parent
    return False


def keyword(call: ast.Call, name: str, position: int | None = None) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def host_calls(fn: HostFunction) -> Iterator[ast.Call]:
    """Calls in a host function's own body (not in nested functions or lambdas)."""
    todo = list(ast.iter_child_nodes(fn.node))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def fmt(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def constexpr_params(kernel: Kernel) -> frozenset[str]:
    """`kernel.constexprs` plus parameters annotated with the string `"tl.constexpr"`."""
    return blocks.constexpr_params(kernel.node, kernel.qualname)


def is_program_id(node: ast.AST) -> bool:
    """A call of `program_id` through any module alias (`tl.`, a vendor's `tle.`, a bare import)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "program_id") or (
        isinstance(func, ast.Name) and func.id == "program_id"
    )


def program_id_calls(kernel: Kernel) -> list[ast.Call]:
    """Every `program_id` call in the kernel, whatever module it is called through, in source order."""
    return sorted((n for n in ast.walk(kernel.node) if is_program_id(n)), key=lambda c: (c.lineno, c.col_offset))


def is_compile_time(expr: ast.AST | None, kernel: Kernel, ctx: Context, _seen: frozenset[str] = frozenset()) -> bool:
    """Whether `expr` is known when the kernel is compiled: literals, constexpr parameters (also
    `"tl.constexpr"` strings), module constants, locals annotated `tl.constexpr`, locals whose every
    assignment is itself compile-time (`per_word = 8`, `half = HEAD_DIM // 2`, `bs = BLOCK`), and
    arithmetic, `.to(...)` casts and `min`/`max` of those."""
    if expr is None:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float, bool))
    if isinstance(expr, ast.Name):
        name = expr.id
        if name in constexpr_params(kernel) or name in _local_constexprs(kernel):
            return True
        if name in kernel.params:
            return False
        values = kernel.assigns.get(name)
        if not values:
            return name in ctx.constants
        if name in _seen or name in _augmented(kernel):
            return False
        return all(is_compile_time(v, kernel, ctx, _seen | {name}) for v in values)
    if isinstance(expr, ast.BinOp):
        return is_compile_time(expr.left, kernel, ctx, _seen) and is_compile_time(expr.right, kernel, ctx, _seen)
    if isinstance(expr, ast.UnaryOp):
        return is_compile_time(expr.operand, kernel, ctx, _seen)
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "to":
            return is_compile_time(func.value, kernel, ctx, _seen)
        if isinstance(func, ast.Name) and func.id in ("min", "max") and expr.args:
            return all(is_compile_time(a, kernel, ctx, _seen) for a in expr.args)
    return False


def jit_callees(ctx: Context, kernel: Kernel) -> list[Kernel]:
    """The `@triton.jit` functions of this file that `kernel` calls, directly or through each
    other (`acc = _attn_fwd_inner(...)`), in the order first reached; not `kernel` itself."""
    out: list[Kernel] = []
    todo = [kernel]
    while todo:
        current = todo.pop()
        for node in ast.walk(current.node):
            if not isinstance(node, ast.Call):
                continue
            callee = ctx.kernels.get(node.func.id) if isinstance(node.func, ast.Name) else None
            if callee is not None and callee is not kernel and callee not in out:
                out.append(callee)
                todo.append(callee)
    return out


def _local_constexprs(kernel: Kernel) -> frozenset[str]:
    """Locals annotated `tl.constexpr` in the body (`half: tl.constexpr = D // 2`)."""
    return frozenset(
        n.target.id
        for n in ast.walk(kernel.node)
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and "constexpr" in ast.unparse(n.annotation)
    )


def _augmented(kernel: Kernel) -> frozenset[str]:
    """Names updated in place (`x += ...`): their value changes as the kernel runs."""
    return frozenset(
        n.target.id for n in ast.walk(kernel.node) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
    )
