"""A launch of a kernel guessed from its source, for compiling it when no real launch is known.

IR facts need a launch: the argument types, their alignment and the constexpr values decide what the
compiler makes. Where nothing was captured and no `--call` is given, `guess_launch` writes a launch
spec from the kernel's own code, so that its IR can still be read (never to run it: the sizes are
guesses and the kernel might read past them):

- a parameter whose value is read or written through (`tl.load(X + offs)`, `tl.store`, atomics, block
  pointers and tensor descriptors, also after `X += row * stride`) is a tensor of 2^20 elements: fp32,
  or int64 when its name says it holds indices (`idx`, `index`, `offsets`, `ids`, `labels`, ...) or
  when the values loaded from it address memory (`t = tl.load(tgt_ptr + i)`, `tl.load(x_ptr + t)`);
- a constexpr with a default keeps it; one used as a size (`tl.arange(0, B)`, a shape, `* B`, `// B`)
  is 64; one used as a condition (`if HAS_BIAS:`) is False; one used as a dtype (`.to(T)`) is fp32;
- any other parameter is an integer, 1 for a name with `stride` and a last-axis suffix (`stride_xn`,
  `stride_n`, `stride_1`, `col_stride`), 1024 otherwise, and a float (0.5) for the usual float names (`eps`,
  `scale`, `alpha`, `p`, `temperature`, ...);
- the grid has one program axis per `tl.program_id(axis)` the kernel reads.

The guess is labelled as such wherever its facts are shown.
"""

from __future__ import annotations

import ast
import re

from diagnose.jit import is_kernel, wrapped_by_assignment
from diagnose.task.specs import CallSpec, DtypeValue, TensorSpec

POINTER_CALLS = (
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
INDEX_NAME = re.compile(
    r"(^|_)(idx|index|indices|ids?|labels?|targets?|offsets|offs|lens|seqlens?|positions|perm|"
    r"expert_ids|token_ids|block_table|slot_mapping)(_|$|ptr)",
    re.I,
)
FLOAT_NAME = re.compile(
    r"^(eps|epsilon|scale|sm_scale|alpha|beta|gamma|p|prob|dropout_p|momentum|lr|"
    r"weight_decay|temperature|softcap|margin|threshold|negative_slope|lambd|offset|"
    r"label_smoothing|beta1|beta2|value|fill_value|min_val|max_val|lo|hi)$",
    re.I,
)
LAST_AXIS_STRIDE = re.compile(r"stride_?[a-z]?(n|1|d|col|cols|w|last)$|^(col|last|inner)_?stride", re.I)
TENSOR_ELEMENTS = 1 << 20


def _is_constexpr(arg: ast.arg) -> bool:
    return arg.annotation is not None and "constexpr" in ast.unparse(arg.annotation)


def _base(node: ast.AST, locals_: dict[str, list[ast.AST]], depth: int = 0) -> set[str]:
    """Names at the root of a pointer expression: `X + offs` -> {X}, followed through local names."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        node = node.left
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        found = {node.id}
        if depth < 8:
            for value in locals_.get(node.id, []):
                found |= _base(value, locals_, depth + 1)
        return found
    if isinstance(node, ast.Call) and _attr(node.func) in ("make_block_ptr", "make_tensor_descriptor", "advance"):
        base = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "base"), None)
        return _base(base, locals_, depth + 1) if base is not None else set()
    return set()


def _attr(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else (node.id if isinstance(node, ast.Name) else None)


def _assignments(kernel: ast.FunctionDef) -> dict[str, list[ast.AST]]:
    """The values each local name of a kernel is assigned (`a = ...`, `a, b = ...`: both names)."""
    out: dict[str, list[ast.AST]] = {}
    for node in ast.walk(kernel):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names = (
                    [target]
                    if isinstance(target, ast.Name)
                    else [e for e in getattr(target, "elts", []) if isinstance(e, ast.Name)]
                )
                for name in names:
                    out.setdefault(name.id, []).append(node.value)
    return out


def pointer_params(
    kernel: ast.FunctionDef, functions: dict[str, ast.FunctionDef] | None = None, depth: int = 0
) -> set[str]:
    """Parameters that are read or written through, here or in a `@triton.jit` function of the module
    the kernel hands them to (`functions`: the module's jit functions by name; FlagGems' kernels pass
    their pointers to an `_impl` helper that loads)."""
    params = {a.arg for a in kernel.args.args}
    locals_ = _assignments(kernel)
    found: set[str] = set()
    for node in ast.walk(kernel):
        if isinstance(node, ast.Call) and _attr(node.func) in (
            *POINTER_CALLS,
            "make_block_ptr",
            "make_tensor_descriptor",
        ):
            first = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg in ("pointer", "base", "ptr")), None)
            )
            if first is not None:
                found |= _base(first, locals_)
        callee = (functions or {}).get(_attr(node.func)) if isinstance(node, ast.Call) else None
        if callee is not None and callee is not kernel and depth < 4:
            inner = pointer_params(callee, functions, depth + 1)
            names = [a.arg for a in callee.args.args]
            passed = list(zip(names, node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]
            for name, value in passed:
                if name in inner:
                    found |= _base(value, locals_)
    return found & params


def index_pointers(kernel: ast.FunctionDef, pointers: set[str]) -> set[str]:
    """Pointer parameters whose loaded values address memory: `t = tl.load(tgt_ptr + i)` then
    `tl.load(inp_ptr + i * C + t)` or `w_ptr += t * N` makes `tgt_ptr` a tensor of indices, whatever its
    name (a float there does not compile: `pointer<fp32> + fp32`)."""
    locals_ = _assignments(kernel)
    # which pointer parameters each local name carries values loaded from, to a fixpoint
    loaded: dict[str, set[str]] = {}
    changed = True
    while changed:
        changed = False
        for name, values in locals_.items():
            found = set(loaded.get(name, set()))
            for value in values:
                for call in ast.walk(value):
                    if isinstance(call, ast.Call) and _attr(call.func) == "load" and call.args:
                        found |= _base(call.args[0], locals_) & pointers
                for used in _names(value):
                    if used != name:
                        found |= loaded.get(used, set())
            if found != loaded.get(name, set()):
                loaded[name], changed = found, True

    def addressing() -> list[ast.AST]:
        out = []
        for node in ast.walk(kernel):
            if isinstance(node, ast.Call) and _attr(node.func) in POINTER_CALLS and node.args:
                out.append(node.args[0])
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in pointers:
                out.append(node.value)
            if isinstance(node, ast.Assign) and _base(node.value, locals_) & pointers:
                out.append(node.value)
        return out

    found: set[str] = set()
    for expression in addressing():
        for used in _names(expression):
            found |= loaded.get(used, set())
    return found


def _constexpr_value(name: str, kernel: ast.FunctionDef):
    size = condition = dtype = False
    for node in ast.walk(kernel):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and name in _names(node.test):
            condition = True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and name in _names(node.operand):
            condition = True
        if isinstance(node, ast.Call):
            func = _attr(node.func)
            args = [*node.args, *(k.value for k in node.keywords)]
            if func in ("arange", "zeros", "full", "range", "static_range", "reshape", "view", "broadcast_to") and any(
                name in _names(a) for a in args
            ):
                size = True
            if func in ("to", "cast") and any(isinstance(a, ast.Name) and a.id == name for a in args):
                dtype = True
            if any(k.arg == "dtype" and isinstance(k.value, ast.Name) and k.value.id == name for k in node.keywords):
                dtype = True
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, (ast.Mult, ast.FloorDiv, ast.Mod))
            and name in _names(node)
        ):
            size = True
    if dtype:
        return DtypeValue("tl.float32")
    if size:
        return 64
    if condition:
        return False
    # By its name, any case (`tile_size` handed on to a helper that sizes its arange with it).
    if re.search(r"BLOCK|TILE|SIZE|GROUP|WIDTH", name, re.I) or re.search(r"_B$|^B[A-Z]$", name):
        return 64
    return False


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _grid(kernel: ast.FunctionDef) -> tuple[int, ...]:
    axes = {0}
    for node in ast.walk(kernel):
        if isinstance(node, ast.Call) and _attr(node.func) in ("program_id", "num_programs"):
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "axis"), None)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                axes.add(arg.value)
    return {1: (128,), 2: (16, 8), 3: (8, 4, 4)}[max(axes) + 1]


def guess_launch(kernel: ast.FunctionDef, functions: dict[str, ast.FunctionDef] | None = None) -> CallSpec:
    """A launch spec for `kernel` (a `@triton.jit` function's AST), from its code and that of the module's
    other jit functions it calls (`functions`, by name)."""
    args = kernel.args.args
    defaults = dict(zip([a.arg for a in args][len(args) - len(kernel.args.defaults) :], kernel.args.defaults))
    pointers = pointer_params(kernel, functions)
    indices = index_pointers(kernel, pointers)
    values = []
    for arg in args:
        name = arg.arg
        if name in defaults and isinstance(defaults[name], ast.Constant):
            values.append((name, defaults[name].value))
        elif _is_constexpr(arg):
            values.append((name, _constexpr_value(name, kernel)))
        elif name in pointers:
            dtype = "i64" if INDEX_NAME.search(name) or name in indices else "f32"
            values.append(
                (
                    name,
                    TensorSpec(
                        dtype,
                        (TENSOR_ELEMENTS,),
                        low=0 if dtype == "i64" else None,
                        high=64 if dtype == "i64" else None,
                    ),
                )
            )
        elif FLOAT_NAME.match(name):
            values.append((name, 0.5))
        elif "stride" in name.lower():
            values.append((name, 1 if LAST_AXIS_STRIDE.search(name) else 1024))
        else:
            values.append((name, 1024))
    return CallSpec(kernel.name, (), tuple(values), _grid(kernel))


def returns_value(kernel: ast.FunctionDef) -> bool:
    """A `@triton.jit` function that returns a value is a device function (a helper, a `tl.reduce`
    combine function): it is compiled inside the kernels that call it and is never launched."""

    def walk(node: ast.AST):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            yield child
            yield from walk(child)

    return any(isinstance(n, ast.Return) and n.value is not None for n in walk(kernel))


def guessed_launches(tree: ast.Module) -> list[CallSpec]:
    """A guessed launch for every module-level kernel of a module."""
    functions = jit_definitions(tree)
    return [guess_launch(node, functions) for node in functions.values() if not returns_value(node)]


def jit_definitions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module-level `@triton.jit` functions of a module, by name."""
    wrapped = wrapped_by_assignment(tree)
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef) and is_kernel(node, wrapped)}
