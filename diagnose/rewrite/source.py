"""Reading sources the way every rewrite needs: kernels, their parameters, pointers and names.

Matching is done on the syntax tree (libcst nodes, compared through Python's `ast` so that spacing
and parentheses do not matter), never on the text of an example file. Editing lives in `edit.py`.

Vocabulary:
- a *kernel* is a top-level function decorated with `triton.jit` (maybe under `triton.autotune` /
  `triton.heuristics`);
- a *host* is a function that launches kernels: a module-level function (`def rms_norm(x, w, eps)`),
  a method of any class (a KernelBench task's `ModelNew.forward`, an autograd `Function.forward`),
  or a function nested in one; it decides block sizes and grids;
- its *launch sites* and *host bindings* are read in `launches.py`.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

import libcst as cst

from diagnose import syntax
from diagnose.blocks import Resolve
from diagnose.jit import is_triton_jit

TL = ("tl", "triton.language", "tl.math", "triton.language.math")  # `tl.math.exp2` is `tl.exp2`
# tl functions that read or write memory or have effects: never duplicated, moved or dropped.
EFFECTS = (
    "store",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_xchg",
    "atomic_cas",
    "device_print",
    "device_assert",
    "debug_barrier",
    "inline_asm_elementwise",
    "static_print",
    "static_assert",
)
REDUCTIONS = (
    "sum",
    "max",
    "min",
    "reduce",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "associative_scan",
    "xor_sum",
    "dot",
    "dot_scaled",
    "sort",
    "histogram",
    "gather",
    "reshape",
    "view",
    "trans",
    "permute",
    "join",
    "split",
    "interleave",
    "broadcast_to",
    "expand_dims",
    "cat",
    "flip",
)

PURE_BUILTINS = ("float", "int", "bool", "min", "max", "abs", "len", "range", "round")

_EMPTY = cst.Module(body=[])


# ---------------------------------------------------------------- reading nodes


def code(node: cst.CSTNode) -> str:
    """The source text of a node, as libcst prints it (a block: its statements, unindented)."""
    if isinstance(node, cst.IndentedBlock):
        return "".join(_EMPTY.code_for_node(s) for s in node.body)
    return _EMPTY.code_for_node(node)


def _ast(text: str) -> ast.AST:
    text = textwrap.dedent(text).strip()
    try:
        return syntax.parse(text, mode="eval")
    except SyntaxError:
        pass
    try:
        # an argument that spans lines inside its call's parentheses, printed alone: `a +\n b`
        return syntax.parse(f"({text}\n)", mode="eval")
    except SyntaxError:
        return syntax.parse(text)


def norm(node: cst.CSTNode | str) -> str:
    """A spacing- and parenthesis-free form of an expression or statement, for comparisons."""
    return ast.dump(_ast(node if isinstance(node, str) else code(node)))


def same(a: cst.CSTNode | str, b: cst.CSTNode | str) -> bool:
    return norm(a) == norm(b)


def names(node: cst.CSTNode | str) -> set[str]:
    """Every name an expression or statement mentions (read or written), attributes excluded."""
    tree = _ast(node if isinstance(node, str) else code(node))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def read_names(node: cst.CSTNode | str) -> set[str]:
    """Names an expression or statement reads (an augmented assignment reads its target too)."""
    tree = _ast(node if isinstance(node, str) else code(node))
    out = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    out |= {n.target.id for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    return out


def dotted(node: cst.CSTNode) -> str | None:
    """`tl.program_id` for an attribute chain of names, None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def tl_name(node: cst.CSTNode) -> str | None:
    """`load` for a call target `tl.load` / `triton.language.load` (`exp2` for `tl.math.exp2`), else None."""
    name = dotted(node)
    for prefix in TL:
        if name and name.startswith(prefix + ".") and name.count(".") == prefix.count(".") + 1:
            return name.rsplit(".", 1)[1]
    return None


def is_tl_call(node: cst.CSTNode, *functions: str) -> bool:
    return isinstance(node, cst.Call) and tl_name(node.func) in functions


def is_program_call(node: cst.CSTNode, *functions: str) -> bool:
    """A `tl.program_id` / `tl.num_programs` call (`functions`), or the same through an op library's own
    helper module: FlagGems' `tle.program_id(0)` (its `triton_lang_extension`, a `@triton.jit` function
    returning `tl.program_id(axis).to(tl.int64)`). Only reading code: a rewrite that writes a program id
    writes it as the kernel does (`program_id_call`), so a widened id stays widened."""
    if not isinstance(node, cst.Call):
        return False
    if tl_name(node.func) in functions:
        return True
    name = dotted(node.func) or ""
    module, _, function = name.partition(".")
    return function in functions and "." not in function and module not in ("tl", "triton")


def is_number(node: cst.CSTNode | None) -> bool:
    """A number written as a literal: `0.0`, `-1`, `float("-inf")`, `-float("inf")` (an accumulator's start)."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    return (
        isinstance(node, cst.Call)
        and code(node.func) == "float"
        and len(node.args) == 1
        and isinstance(node.args[0].value, cst.SimpleString)
        and node.args[0].value.evaluated_value.lstrip("+-") == "inf"
    )


def int_value(node: cst.CSTNode | None) -> int | None:
    """The value of an integer literal (`128`, `-1`, `1 << 10`, `2**12`), else None."""
    if node is None:
        return None
    return _int(_ast(code(node)).body if isinstance(node, cst.BaseExpression) else None)


_INT_OPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b if b else None,
    ast.Pow: lambda a, b: a**b if 0 <= b < 64 else None,
    ast.LShift: lambda a, b: a << b if 0 <= b < 64 else None,
}


def _int(tree: ast.AST | None) -> int | None:
    if isinstance(tree, ast.Constant) and isinstance(tree.value, int) and not isinstance(tree.value, bool):
        return tree.value
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.USub):
        inner = _int(tree.operand)
        return -inner if inner is not None else None
    if isinstance(tree, ast.BinOp) and type(tree.op) in _INT_OPS:
        a, b = _int(tree.left), _int(tree.right)
        return _INT_OPS[type(tree.op)](a, b) if a is not None and b is not None else None
    return None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


# Modules (and what is read off them) kept per text: a libcst module is an immutable value, and one
# optimize run's proposing parsed the same few sources and walked them for their launches hundreds of
# times (softmax on the CPU: 294 `launch_sites` of 46 parses of 8 texts, 12 of its 15 s).
MEMO = 64
# Subtrees whose nodes `walk` keeps: a few files' kernels, hosts and the statements in them.
WALKS = 1024


@lru_cache(maxsize=MEMO)
def parsed(source: str) -> cst.Module:
    """`source` parsed, once per text."""
    return cst.parse_module(source)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `node`, itself included, in source order."""
    return iter(nodes_under(node))


@lru_cache(maxsize=WALKS)
def nodes_under(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """`walk`'s nodes, once per node (nodes are immutable, equal and hashed by identity). Rewrites walk
    the same kernels and hosts again and again, and libcst computes a node's `children` anew on each
    read: a million walk steps were most of an optimize run's proposing. With a stack, not nested
    generators, where a node at depth d cost d steps."""
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(current.children))
    return tuple(out)


def calls(node: cst.CSTNode, *functions: str) -> list[cst.Call]:
    """The `tl.<function>` calls under `node`."""
    return [n for n in walk(node) if is_tl_call(n, *functions)]


def program_calls(node: cst.CSTNode, *functions: str) -> list[cst.Call]:
    """The program id / count calls under `node`, a library helper's included (`is_program_call`)."""
    return [n for n in walk(node) if is_program_call(n, *functions)]


def has_effects(node: cst.CSTNode) -> bool:
    """A store, an atomic, a print, or a call to anything that is not a `tl` function or a method."""
    for n in walk(node):
        if isinstance(n, cst.Call):
            name = tl_name(n.func)
            if name in EFFECTS:
                return True
            if name is None and isinstance(n.func, cst.Name) and n.func.value not in PURE_BUILTINS:
                return True  # a user helper: who knows what it does
    return False


def assigned_names(node: cst.CSTNode) -> set[str]:
    """Names a statement (or block) binds: assignment targets, augmented targets, loop targets."""
    out: set[str] = set()
    tree = _ast(code(node))
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


# ---------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Kernel:
    """A `@triton.jit` function at module level."""

    name: str
    node: cst.FunctionDef
    params: tuple[str, ...]
    constexprs: tuple[str, ...]
    decorators: tuple[str, ...]

    @property
    def jit_by_assignment(self) -> bool:
        """Made a kernel by assignment after its definition (`f = triton.jit(f)`), not by its own decorators."""
        return not any(is_jit_decorator(d) for d in self.node.decorators)

    @property
    def autotuned(self) -> bool:
        return any(d.split("(")[0].endswith(("autotune", "heuristics")) for d in self.decorators)

    def decides(self, params: set[str]) -> bool:
        """Whether a wrapper of the kernel may set any of `params` itself: an autotuner (its configs), or
        a `triton.heuristics` that sets one of them or whose keys cannot be read. unsloth's
        `triton.heuristics({"GEMMA": ...})` sets a flag, not a launch's block size or warps."""
        for decorator in self.decorators:
            name = decorator.split("(")[0]
            if name.endswith("autotune"):
                return True
            if name.endswith("heuristics"):
                keys = heuristic_keys(decorator)
                if keys is None or keys & params:
                    return True
        return False

    def index(self, param: str) -> int:
        return self.params.index(param)

    @property
    def statements(self) -> tuple[cst.BaseStatement, ...]:
        return tuple(self.node.body.body)


def param_default(kernel: Kernel, name: str) -> cst.BaseExpression | None:
    """The default value the kernel's signature gives `name` (`BLOCK_M: tl.constexpr = 64`), else None."""
    params = kernel.node.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param.default
    return None


def heuristic_keys(decorator: str) -> set[str] | None:
    """The names a `triton.heuristics({...})` decorator sets, or None where its dict is not written out."""
    try:
        call = cst.parse_expression(decorator)
    except cst.ParserSyntaxError:
        return None
    values = call.args[0].value if isinstance(call, cst.Call) and len(call.args) == 1 else None
    if not isinstance(values, cst.Dict):
        return None
    keys = set()
    for element in values.elements:
        key = getattr(element, "key", None)
        if not isinstance(key, cst.SimpleString):
            return None
        keys.add(key.evaluated_value)
    return keys


def is_jit_decorator(decorator: cst.Decorator) -> bool:
    target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
    return is_triton_jit(dotted(target))


def _is_constexpr(param: cst.Param) -> bool:
    return param.annotation is not None and (dotted(param.annotation.annotation) or "").endswith("constexpr")


def kernels(module: cst.Module) -> dict[str, Kernel]:
    """The module-level kernels, by name: functions made kernels by `@triton.jit`, or by an assignment
    after their definition (`_rope = triton.jit(_rope)`, unsloth's style), whose wrappers then count
    as their outermost decorators."""
    out = {}
    wrapped = wrapped_by_assignment(module)
    for node in module.body:
        if not isinstance(node, cst.FunctionDef):
            continue
        decorators = [*wrapped.get(node.name.value, []), *(d.decorator for d in node.decorators)]
        if any(is_jit_decorator(cst.Decorator(d)) for d in decorators):
            params = [p for p in node.params.params]
            out[node.name.value] = Kernel(
                name=node.name.value,
                node=node,
                params=tuple(p.name.value for p in params),
                constexprs=tuple(p.name.value for p in params if _is_constexpr(p)),
                decorators=tuple(code(d) for d in decorators),
            )
    return out


def wrapped_by_assignment(module: cst.Module) -> dict[str, list[cst.BaseExpression]]:
    """`diagnose.jit.wrapped_by_assignment` on a libcst module (the rewrites' tree): per module-level function, what
    wraps it by assignment (`f = triton.heuristics({...})(f)`), outermost first."""
    defined = {node.name.value for node in module.body if isinstance(node, cst.FunctionDef)}
    out: dict[str, list[cst.BaseExpression]] = {}
    for line in module.body:
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            continue
        statement = line.body[0]
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
            continue
        target, value = statement.targets[0].target, statement.value
        if (
            isinstance(target, cst.Name)
            and target.value in defined
            and isinstance(value, cst.Call)
            and len(value.args) == 1
            and value.args[0].keyword is None
            and not value.args[0].star
            and isinstance(value.args[0].value, cst.Name)
            and value.args[0].value.value == target.value
        ):
            out.setdefault(target.value, []).insert(0, value.func)
    return out


def program_id_names(kernel: Kernel) -> dict[str, int]:
    """Names bound directly to `tl.program_id(axis)` (or a library's helper for it: `is_program_call`) at
    the kernel's top level, with their axis."""
    out = {}
    for stmt in kernel.statements:
        target, value = simple_assignment(stmt)
        if target and is_program_call(value, "program_id"):
            axis = axis_of(value)
            if axis is not None:
                out[target] = axis
    return out


def program_id_call(kernel: Kernel, name: str, axis: int = 0) -> str:
    """A program id call of `axis` through the function the kernel binds `name` with (`tl.program_id(0)`,
    `tle.program_id(0)`): what a rewrite writes where it reads a program id again, so that its dtype
    stays the kernel's (a library helper's int64)."""
    for stmt in kernel.statements:
        target, value = simple_assignment(stmt)
        if target == name and is_program_call(value, "program_id"):
            return f"{dotted(value.func)}({axis})"
    raise ValueError(f"{name} is not bound to a program id at the kernel's top level")


def axis_of(call: cst.Call) -> int | None:
    """The literal axis of a `tl.program_id` / `tl.num_programs` call, or None."""
    arg = keyword(call, "axis") or (positional(call)[0] if positional(call) else None)
    return int_value(arg.value) if arg is not None else None


def loop_body(loop: cst.For) -> list[cst.BaseStatement]:
    """The statements of a loop's body (a one-line `for ...: a; b` as one statement line)."""
    if isinstance(loop.body, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(loop.body.body))]
    return list(loop.body.body)


def simple_assignment(stmt: cst.CSTNode) -> tuple[str | None, cst.BaseExpression | None]:
    """(`name`, value) for a statement line `name = value`, else (None, None)."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            return assign.targets[0].target.value, assign.value
    return None, None


def coupled_by_axis(kernel: Kernel, bound: dict[str, int] | None = None) -> dict[int, set[str]]:
    """Constexprs that multiply a value derived from `tl.program_id(axis)`, per axis; `bound`: more names
    known to hold a program id (name -> axis), bound through a library's own helper."""
    derived: dict[str, set[int]] = {
        name: {axis} for name, axis in {**program_id_names(kernel), **(bound or {})}.items()
    }
    for stmt in kernel.statements:
        target, value = simple_assignment(stmt)
        if target and value is not None:
            axes = set().union(*(derived.get(n, set()) for n in names(value)))
            axes |= {a for a in (axis_of(c) for c in program_calls(value, "program_id")) if a is not None}
            if axes:
                derived[target] = derived.get(target, set()) | axes
    out: dict[int, set[str]] = {}
    for node in walk(kernel.node.body):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            for mine, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(mine, cst.Name) and mine.value in kernel.constexprs:
                    axes = set().union(*(derived.get(n, set()) for n in names(other)))
                    axes |= {a for a in (axis_of(c) for c in program_calls(other, "program_id")) if a is not None}
                    for axis in axes:
                        out.setdefault(axis, set()).add(mine.value)
    return out


def block_constexprs(kernel: Kernel) -> set[str]:
    """Constexprs that size a block: read by a `tl.arange(...)` or by a loop's `range(...)`. A constexpr
    that only multiplies a program id is a stride (unsloth's `X_row_stride: tl.constexpr`), not a block."""
    out = set()
    for node in walk(kernel.node.body):
        if isinstance(node, cst.Call) and (dotted(node.func) or "").split(".")[-1] in (
            "arange",
            "range",
            "static_range",
        ):
            out |= names(node) & set(kernel.constexprs)
    return out


def grid_coupled(kernel: Kernel) -> set[str]:
    """Constexprs that multiply a program id: the grid must follow them (`pid * BLOCK`)."""
    pids = set(program_id_names(kernel))
    derived = set(pids)
    for stmt in kernel.statements:  # names computed from a program id (pid_m = first + pid % g)
        target, value = simple_assignment(stmt)
        if target and value is not None and names(value) & derived:
            derived.add(target)
    out = set()
    for node in walk(kernel.node.body):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            sides = [node.left, node.right]
            for mine, other in (sides, sides[::-1]):
                other_names = names(other)
                if (
                    isinstance(mine, cst.Name)
                    and mine.value in kernel.constexprs
                    and (other_names & derived or program_calls(other, "program_id"))
                ):
                    out.add(mine.value)
    return out


def triton_language(tree: ast.Module) -> str:
    """How the module spells triton.language: the name it imports it as (`tl` nearly always)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton.language":
                    return alias.asname or "triton.language"
        elif isinstance(node, ast.ImportFrom) and node.module == "triton" and not node.level:
            for alias in node.names:
                if alias.name == "language":
                    return alias.asname or "language"
    return "tl"


def language_resolver(language: str) -> Resolve:
    """Dotted names of call targets, the module's spelling of triton.language written out in full."""

    def resolve(node: ast.AST) -> str | None:
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        name = ast.unparse(node)
        return "triton.language" + name[len(language) :] if name.startswith(language + ".") else name

    return resolve


def module_names(module: cst.Module) -> set[str]:
    """Every name the module mentions, the names its imports bind included."""
    tree = syntax.parse(module.code)
    bound = {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    return (
        {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        | bound
        | {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    )


def pointer_params(kernel: Kernel, *accesses: str) -> list[str]:
    """Parameters used as the base pointer of a load, store or atomic (in parameter order), by
    `pointer_bases`; of those `accesses` alone where given (`"store"`)."""
    found: set[str] = set()
    accesses = accesses or ("load", "store", *[e for e in EFFECTS if e.startswith("atomic")])
    for call in calls(kernel.node.body, *accesses):
        pointer = keyword(call, "pointer") or (call.args[0] if call.args else None)
        if pointer is not None:
            found |= pointer_bases(kernel, pointer.value)
    return [p for p in kernel.params if p in found]


def bindings(node: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
    """Every `name = value` under `node`, at any depth, by name, in source order."""
    out: dict[str, list[cst.BaseExpression]] = {}
    for child in walk(node):
        target, value = simple_assignment(child)
        if target is not None:
            out.setdefault(target, []).append(value)
    return out


def pointer_bases(
    kernel: Kernel, expr: cst.BaseExpression, depth: int = 0, local: dict[str, list] | None = None
) -> set[str]:
    """The parameters a pointer expression is based on: the leftmost term of its additive chain
    (`x_ptr + offs`), followed through local names (`x_row = x_ptr + row * stride`), Triton's `pointer +
    offsets` convention; not the sizes and strides in its offsets. A block pointer's base is its
    `tl.make_block_ptr(base, ...)` argument, through `tl.advance(p, ...)` (the idiom of
    flash-linear-attention's kernels)."""
    while True:
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
            expr = expr.left
        elif is_tl_call(expr, "make_block_ptr", "advance") and expr.args:
            expr = (keyword(expr, "base") or expr.args[0]).value
        else:
            break
    if not isinstance(expr, cst.Name):
        return set()
    if expr.value in kernel.params:
        return {expr.value}
    if depth >= 8:
        return set()
    if local is None:
        local = bindings(kernel.node.body)
    return set().union(*(pointer_bases(kernel, v, depth + 1, local) for v in local.get(expr.value, [])))


def load_derived(kernel: Kernel) -> set[str]:
    """Local names whose value depends on something loaded from memory."""
    assigned = [(t, v) for t, v in (simple_assignment(n) for n in walk(kernel.node.body)) if t is not None]
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for target, value in assigned:
            if target not in out and (calls(value, "load") or names(value) & out):
                out.add(target)
                changed = True
    return out
