"""Reading sources the way every rewrite needs: kernels, their launches, host bindings, names.

Matching is done on the syntax tree (libcst nodes, compared through Python's `ast` so that spacing
and parentheses do not matter), never on the text of an example file. Editing lives in `edit.py`.

Vocabulary:
- a *kernel* is a top-level function decorated with `triton.jit` (maybe under `triton.autotune` /
  `triton.heuristics`);
- a *host* is a function that launches kernels: a module-level function (`def rms_norm(x, w, eps)`),
  a method of any class (a KernelBench task's `ModelNew.forward`, an autograd `Function.forward`),
  or a function nested in one; it decides block sizes and grids;
- a *launch site* is a statement `kernel[grid](args...)` (or `out = kernel[grid](args...)`) in a host,
  at any depth of its blocks;
- a *host binding* is `BLOCK = 128` (or `BM, BN = 32, 32`) in the host, the literal a retune edits.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterator, Sequence

import libcst as cst

from diagnose import syntax
from diagnose.blocks import Resolve
from diagnose.jit import is_kernel_wrapper, is_triton_jit

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
        return not any(_is_jit(d) for d in self.node.decorators)

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
                keys = _heuristic_keys(decorator)
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


def _heuristic_keys(decorator: str) -> set[str] | None:
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


def _is_jit(decorator: cst.Decorator) -> bool:
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
        if any(_is_jit(cst.Decorator(d)) for d in decorators):
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


# ---------------------------------------------------------------- host side: the functions that launch


@dataclass(frozen=True)
class LaunchSite:
    """One launch statement, `kernel[grid](...)` or `out = kernel[grid](...)`, and the host function it
    is in: a module-level function, a method of any class (`ModelNew.forward`, an autograd
    `Function.forward`), or a function nested in one, at any depth of its blocks (`with`, `if`, `for`)."""

    kernel: str
    statement: cst.SimpleStatementLine
    call: cst.Call
    grid: cst.BaseExpression
    host: cst.FunctionDef
    host_name: str  # qualified as Python does: `rms_norm_forward`, `RMSNormFunction.forward`, `op.<locals>.run`
    indent: int  # the column the statement starts at
    # the module's integer constants (`module_constants`), which a launch may pass (`BLOCK_SIZE=BLOCK_SIZE`)
    constants: tuple[tuple[str, int], ...] = ()
    # the other kernels this statement may launch: it launches a name bound to one of several
    # (`fx = _gemma_forward if gemma else _forward`, unsloth's RMS norm); see `alias_kept`
    shares: tuple[str, ...] = ()

    def constant(self, name: str) -> int | None:
        """The value of the module constant `name` (bound nowhere else, the host included, and not a
        parameter of the host, which would shadow it), else None."""
        params = self.host.params
        shadows = [*params.posonly_params, *params.params, *params.kwonly_params]
        if any(p.name.value == name for p in shadows):
            return None
        return dict(self.constants).get(name)

    def arg(self, kernel: Kernel, param: str) -> cst.Arg | None:
        """The argument the launch passes for `param` (positional or keyword); None where it passes none,
        or where a `*args` before its position leaves it unknown."""
        found = keyword(self.call, param)
        if found is not None:
            return found
        args = []
        for a in self.call.args:
            if a.star:  # past `*args` a position no longer says which parameter it fills
                break
            if a.keyword is None:
                args.append(a)
        index = kernel.index(param) if param in kernel.params else -1
        return args[index] if 0 <= index < len(args) else None

    def value(self, kernel: Kernel, param: str) -> cst.BaseExpression | None:
        arg = self.arg(kernel, param)
        return arg.value if arg is not None else None

    @property
    def lead(self) -> int:
        """The width of what comes before the call on its line: `out = ` for an assignment, else 0."""
        small = code(self.statement.body[0])
        call = code(self.call)
        return len(small) - len(call) if small.endswith(call) and "\n" not in small[: -len(call)] else 0

    @property
    def assigns(self) -> bool:
        """The launch's result is kept (`out = kernel[grid](...)`)."""
        return isinstance(self.statement.body[0], cst.Assign)

    def passes_unpacked(self, param: str) -> bool:
        """Whether a `**kwargs` of the launch may pass `param` (a dict whose keys cannot be read: it may)."""
        for a in self.call.args:
            if a.star == "**":
                keys = dict_keys(self.host, a.value)
                if keys is None or param in keys:
                    return True
        return False


@lru_cache(maxsize=MEMO)
def module_constants(module: cst.Module) -> tuple[tuple[str, int], ...]:
    """Names the module binds once, at its top level, to an integer literal, and nowhere else (no
    function, branch or loop assigns them again): `BLOCK_SIZE = 1024` (unsloth's swiglu), which a launch
    passes as `BLOCK_SIZE=BLOCK_SIZE`."""
    counts: dict[str, int] = {}
    for node in walk(module):
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            targets = [node.target]
        elif isinstance(node, (cst.Global, cst.For)):
            targets = [n.name for n in node.names] if isinstance(node, cst.Global) else [node.target]
        for target in targets:
            for n in walk(target) if not isinstance(target, cst.Name) else (target,):
                if isinstance(n, cst.Name):
                    counts[n.value] = counts.get(n.value, 0) + 1
    out = {}
    for line in module.body:
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            continue
        statement = line.body[0]
        if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0].target, statement.value
        elif isinstance(statement, cst.AnnAssign) and statement.value is not None:  # `BLOCK_SIZE: int = 1024`
            target, value = statement.target, statement.value
        else:
            continue
        literal = int_value(value)
        if isinstance(target, cst.Name) and literal is not None and counts.get(target.value) == 1:
            out[target.value] = literal
    return tuple(sorted(out.items()))


def launch_sites(module: cst.Module, known: dict[str, Kernel] | None = None) -> list[LaunchSite]:
    """Launch statements of every function of the module (kernels aside), at any depth of their
    blocks, in source order. A launch through a local name bound once to a kernel (`fn = kernel`) is
    that kernel's; through one bound to a choice of kernels (`fx = a if c else b`), one site per kernel,
    each naming the others (`shares`). A launch through an attribute or in a one-line suite
    (`if x: kernel[grid](...)`) is not found."""
    if known is None:
        return list(all_launch_sites(module))
    return _launch_sites(module, known)


@lru_cache(maxsize=MEMO)
def all_launch_sites(module: cst.Module) -> tuple[LaunchSite, ...]:
    """`launch_sites` of the module's own kernels, once per module (a module is an immutable value)."""
    return tuple(_launch_sites(module, kernels(module)))


def _launch_sites(module: cst.Module, known: dict[str, Kernel]) -> list[LaunchSite]:
    constants = module_constants(module)
    out: list[LaunchSite] = []

    def visit(node: cst.CSTNode, host: cst.FunctionDef | None, host_name: str, scope: str, indent: int) -> None:
        if isinstance(node, cst.FunctionDef):
            if any(_is_jit(d) for d in node.decorators):
                return
            host_name = f"{scope}{node.name.value}"
            host, scope = node, f"{host_name}.<locals>."
        elif isinstance(node, cst.ClassDef):
            scope = f"{scope}{node.name.value}."
        elif isinstance(node, cst.IndentedBlock):
            indent += len(module.default_indent if node.indent is None else node.indent)
        elif isinstance(node, cst.SimpleStatementLine):
            for site in _launches(node, known, host, host_name, indent) if host is not None else ():
                out.append(replace(site, constants=constants))
            return
        for child in node.children:
            if not isinstance(child, cst.BaseExpression):  # statements never sit inside an expression
                visit(child, host, host_name, scope, indent)

    visit(module, None, "", "", 0)
    return out


def _launches(
    node: cst.SimpleStatementLine, known: dict[str, Kernel], host: cst.FunctionDef, host_name: str, indent: int
) -> list[LaunchSite]:
    """The launch sites of one statement: none, one, or one per kernel a local alias may name."""
    if len(node.body) != 1 or not isinstance(node.body[0], (cst.Expr, cst.Assign)):
        return []
    call = node.body[0].value
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Subscript)
        and kernel_name(call.func.value) is not None
        and all(isinstance(e.slice, cst.Index) for e in call.func.slice)
    ):
        return []
    launched = aliased(host, kernel_name(call.func.value).value, known)
    return [
        LaunchSite(
            name, node, call, subscript_grid(call.func), host, host_name, indent, (), launched[:i] + launched[i + 1 :]
        )
        for i, name in enumerate(launched)
    ]


def kernel_name(launched: cst.BaseExpression) -> cst.Name | None:
    """The name a launch's `launched[grid](...)` launches: `launched` itself, or the kernel a wrapper passes
    through (`wrap_triton(kernel)`, see `diagnose.jit.is_kernel_wrapper`); None for anything else."""
    if isinstance(launched, cst.Name):
        return launched
    if (
        isinstance(launched, cst.Call)
        and is_kernel_wrapper(dotted(launched.func))
        and len(launched.args) == 1
        and launched.args[0].keyword is None
        and not launched.args[0].star
        and isinstance(launched.args[0].value, cst.Name)
    ):
        return launched.args[0].value
    return None


def with_kernel_name(launched: cst.BaseExpression, name: str) -> cst.BaseExpression:
    """`launched` (a name or a wrapper of one, `kernel_name`) launching `name` instead, the wrapper kept."""
    if isinstance(launched, cst.Call):
        return launched.with_changes(args=[launched.args[0].with_changes(value=cst.Name(name))])
    return cst.Name(name)


# Launch keywords that are the launch's, not the kernel's: the same for any kernel a launch may name.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def aliased(host: cst.FunctionDef, name: str, known: dict[str, Kernel]) -> tuple[str, ...]:
    """The kernels a launch of `name` in `host` launches: `name` itself where it is a kernel, else those
    of its one binding in `host`, a kernel (`fn = kernel`) or a choice of kernels (`fx = a if c else b`)."""
    if name in known:
        return (name,)
    statements = host_assignments(host, name)
    target, value = simple_assignment(statements[0]) if len(statements) == 1 else (None, None)
    if target != name:
        return ()
    choices = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
    found = [c.value for c in choices if isinstance(c, cst.Name) and c.value in known]
    return tuple(dict.fromkeys(found)) if len(found) == len(choices) else ()


def alias_kept(before: cst.Module, after: str) -> str | None:
    """Why a rewrite from `before` to the source `after` would break a kernel it was not checked on, or
    None: a statement that may launch several kernels (`LaunchSite.shares`) must keep what it gives them
    but for the `LAUNCH_OPTIONS`, and those kernels their parameters; only one of them runs where the
    rewrite is verified. `after` is parsed only where `before` has such a statement."""
    old_kernels = kernels(before)
    old_sites = [s for s in launch_sites(before, old_kernels) if s.shares]
    if not old_sites:
        return None
    after_module = parsed(after)
    new_kernels = kernels(after_module)
    new_sites = [s for s in launch_sites(after_module, new_kernels) if s.shares]
    if len(old_sites) != len(new_sites):
        return "a launch of several kernels through one name changed"
    for old, new in zip(old_sites, new_sites):
        for name in (old.kernel, *old.shares):
            if name not in new_kernels or new_kernels[name].params != old_kernels[name].params:
                return f"the launch at {old.host_name} may launch {name} too, whose parameters would change"

        def given(site: LaunchSite) -> list[str]:
            return [code(a) for a in site.call.args if not (a.keyword and a.keyword.value in LAUNCH_OPTIONS)]

        if given(old) != given(new) or code(old.grid) != code(new.grid):
            others = ", ".join(old.shares)
            return f"the launch at {old.host_name} may launch {others} too: only its launch options may change"
    return None


def subscript_grid(subscript: cst.Subscript) -> cst.BaseExpression:
    """The grid of `kernel[...]`: the expression inside, or, for `kernel[M,]` and `kernel[M, N]` (FlagGems
    writes its 1-D grids so), the tuple Python makes of it. That tuple is not a node of the module: a
    codemod that changes such a grid replaces the launch's whole subscript, as it does for `kernel[(M,)]`."""
    elements = subscript.slice
    if len(elements) == 1 and not isinstance(elements[0].comma, cst.Comma):
        return elements[0].slice.value
    return cst.Tuple([cst.Element(e.slice.value) for e in elements])


def sites_of(module: cst.Module, kernel: str) -> list[LaunchSite]:
    return [s for s in launch_sites(module) if s.kernel == kernel]


def launched(sites: list[LaunchSite]) -> str:
    """How often and where a kernel is launched, for a reason: `launched 2 times (in Fn.forward, Fn.backward)`."""
    if not sites:
        return "not launched from any function of the module"
    hosts = ", ".join(dict.fromkeys(s.host_name for s in sites))
    return f"launched {len(sites)} times (in {hosts})"


def within(site: LaunchSite, other: LaunchSite) -> bool:
    """`other` runs in `site`'s host or in a function nested in it, where the host's names reach it."""
    return any(n is other.host for n in walk(site.host))


def dict_keys(host: cst.FunctionDef, expr: cst.BaseExpression) -> set[str] | None:
    """The keys a launch's `**expr` may hold: a dict display with string keys, or a name bound once in
    `host` to one (`kernel_args = {}`) and otherwise only given keys by `name["key"] = ...` or read as
    `**name`; None when they cannot be read (a helper fills it, `.update(...)`, a computed key)."""
    if isinstance(expr, cst.Dict):
        return _display_keys(expr)
    if not isinstance(expr, cst.Name):
        return None
    keys: set[str] = set()
    bindings = accounted = 0
    for node in walk(host.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if dotted(target) == expr.value and isinstance(node.value, cst.Dict):
                found = _display_keys(node.value)
                if found is None:
                    return None
                keys |= found
                bindings += 1
                accounted += 1
            elif isinstance(target, cst.Subscript) and dotted(target.value) == expr.value:
                key = _string_key(target)
                if key is None:
                    return None
                keys.add(key)
                accounted += 1
        elif isinstance(node, cst.Arg) and node.star == "**" and dotted(node.value) == expr.value:
            accounted += 1
    mentions = sum(1 for n in walk(host.body) if isinstance(n, cst.Name) and n.value == expr.value)
    return keys if bindings == 1 and mentions == accounted else None


def _display_keys(node: cst.Dict) -> set[str] | None:
    keys = set()
    for element in node.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
            return None
        keys.add(element.key.evaluated_value)
    return keys


def _string_key(target: cst.Subscript) -> str | None:
    if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        key = target.slice[0].slice.value
        if isinstance(key, cst.SimpleString):
            return key.evaluated_value
    return None


@dataclass(frozen=True)
class HostBinding:
    """Where a host function binds a name to an integer literal: `BLOCK = 128` or `BM, BN = 32, 32`;
    `literal` is the node a new value replaces. For a block sized to the problem as a power of two
    (`launch_values.host_binding`), `literal` is the whole computed value and `value` None."""

    name: str
    statement: cst.SimpleStatementLine
    literal: cst.BaseExpression
    value: int | None


def host_assignments(host: cst.FunctionDef, name: str) -> list[cst.SimpleStatementLine]:
    """The statement lines of `host` (at any depth) that bind `name`."""
    return [n for n in walk(host.body) if isinstance(n, cst.SimpleStatementLine) and name in assigned_names(n)]


def literal_binding(host: cst.FunctionDef, name: str) -> HostBinding | None:
    """The one statement binding `name` to an integer literal in `host`, or None."""
    statements = host_assignments(host, name)
    if len(statements) != 1 or len(statements[0].body) != 1 or not isinstance(statements[0].body[0], cst.Assign):
        return None
    assign = statements[0].body[0]
    if len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, cst.Name) and target.value == name:
        number = int_value(value)
        return HostBinding(name, statements[0], value, number) if number is not None else None
    if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) and len(target.elements) == len(value.elements):
        for t, v in zip(target.elements, value.elements):
            if isinstance(t.value, cst.Name) and t.value.value == name:
                number = int_value(v.value)
                return HostBinding(name, statements[0], v.value, number) if number is not None else None
    return None


def reaching_binding(host: cst.FunctionDef, name: str, statement: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The statement line of `host` whose binding of `name` the line `statement` reads: the last one
    before it in its own block or an enclosing one (each branch of an `if` on the inputs' ranks binding a
    grid of its own, as LLM-written hosts dispatch). None where a compound statement in between binds
    it too (a branch or a loop decides which), where a loop around `statement` binds it again after
    it, or where nothing in `host` binds it before."""
    path = _block_path(host.body, statement, host)
    for body, index, owner in reversed(path or []):
        if isinstance(owner, (cst.For, cst.While)) and any(_binds(s, name) for s in body[index + 1 :]):
            return None
        for before in reversed(body[:index]):
            if isinstance(before, cst.SimpleStatementLine) and name in assigned_names(before):
                return before
            if _binds(before, name):
                return None
    return None


def _binds(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.SimpleStatementLine) and name in assigned_names(n) for n in walk(node))


def _block_path(
    node: cst.CSTNode, target: cst.CSTNode, owner: cst.CSTNode
) -> list[tuple[Sequence[cst.BaseStatement], int, cst.CSTNode]] | None:
    """The blocks from `node` down to the one holding `target`: per block its statements, the index of
    the one on the way (or `target` itself), and the compound statement that owns the block."""
    if isinstance(node, cst.IndentedBlock):
        for index, child in enumerate(node.body):
            if child is target:
                return [(node.body, index, owner)]
            below = _block_path(child, target, child)
            if below is not None:
                return [(node.body, index, owner), *below]
        return None
    for child in node.children:
        below = _block_path(child, target, child if isinstance(child, cst.BaseCompoundStatement) else owner)
        if below is not None:
            return below
    return None


def grid_binding(site: LaunchSite) -> cst.SimpleStatementLine | None:
    """The statement that binds the launch's grid variable for it: the host's one binding of the name,
    else the one that reaches the launch (`reaching_binding`)."""
    if not isinstance(site.grid, cst.Name):
        return None
    statements = host_assignments(site.host, site.grid.value)
    if len(statements) == 1:
        return statements[0]
    return reaching_binding(site.host, site.grid.value, site.statement) if statements else None


def resolve_grid(site: LaunchSite) -> tuple[cst.BaseExpression, cst.SimpleStatementLine | None]:
    """The grid expression of a launch, through the `grid = (...)` assignment of its host that reaches it
    (`grid_binding`), or through a grid function the host defines whose one statement returns a tuple
    that does not read its `meta` (`def grid(meta): return (n_rows,)`, vLLM's); and that statement."""
    if isinstance(site.grid, cst.Name):
        statement = grid_binding(site)
        if statement is not None:
            target, value = simple_assignment(statement)
            if target == site.grid.value and value is not None:
                return value, statement
    function = grid_function(site.host, site.grid)
    if function is not None and isinstance(function.body, cst.IndentedBlock) and len(function.body.body) == 1:
        line = function.body.body[0]
        returned = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        params = {p.name.value for p in function.params.params}
        if isinstance(returned, cst.Return) and returned.value is not None and not names(returned.value) & params:
            return returned.value, line
    return site.grid, None


def grid_function(host: cst.FunctionDef, grid: cst.BaseExpression) -> cst.FunctionDef | None:
    """The function a launch's grid names, where the host defines it (`def grid(meta): return (b,
    triton.cdiv(d, meta["BLOCK_SIZE"]))`, as vLLM writes it): a callable grid, as a `lambda meta:` is."""
    if not isinstance(grid, cst.Name):
        return None
    for node in walk(host.body):
        if isinstance(node, cst.FunctionDef) and node.name.value == grid.value and node.params.params:
            return node
    return None


def grid_shared(module: cst.Module, site: LaunchSite) -> bool:
    """The launch's grid is a variable that other launches of its host (or of functions nested in it)
    use too: changing it would change theirs."""
    if not isinstance(site.grid, cst.Name):
        return False
    mine = grid_binding(site)
    others = [
        s
        for s in launch_sites(module)
        if within(site, s)
        and isinstance(s.grid, cst.Name)
        and s.grid.value == site.grid.value
        and s.statement is not site.statement
    ]
    # a launch whose own binding of the name is another statement (the `else` branch's grid) is not a sharer
    theirs = [grid_binding(s) for s in others]
    return any(mine is None or binding is None or binding is mine for binding in theirs)


def block_of(host: cst.FunctionDef, stmt: cst.CSTNode) -> list[cst.BaseStatement] | None:
    """The statements of the block of `host` that holds `stmt` (found by identity), in order."""
    for node in walk(host):
        if isinstance(node, cst.IndentedBlock) and any(s is stmt for s in node.body):
            return list(node.body)
    return None


def bound_before(site: LaunchSite, statement: cst.CSTNode) -> set[str] | None:
    """Names bound in the host when `statement` (one of its statement lines) runs: the host's
    parameters, what the statements before it in its block bind, and so on out through the blocks
    that hold it (`with` targets included); None when it is not in the host."""

    def search(block: cst.BaseSuite, bound: set[str]) -> set[str] | None:
        if not isinstance(block, cst.IndentedBlock):
            return None
        for stmt in block.body:
            if stmt is statement:
                return bound
            if isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                inner = bound | _header_names(stmt)
                for suite in _suites(stmt):
                    found = search(suite, inner)
                    if found is not None:
                        return found
            bound = bound | assigned_names(stmt)
        return None

    params = site.host.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return search(site.host.body, {p.name.value for p in every})


def _header_names(stmt: cst.BaseCompoundStatement) -> set[str]:
    """Names a compound statement binds before its body runs (`with ... as f`, a loop's target)."""
    if isinstance(stmt, cst.With):
        return set().union(*(names(i.asname.name) for i in stmt.items if i.asname is not None))
    if isinstance(stmt, cst.For):
        return names(stmt.target)
    return set()


def _suites(stmt: cst.BaseCompoundStatement) -> list[cst.BaseSuite]:
    out = [stmt.body]
    orelse = getattr(stmt, "orelse", None)
    while isinstance(orelse, cst.If):
        out.append(orelse.body)
        orelse = orelse.orelse
    if orelse is not None:
        out.append(orelse.body)
    if isinstance(stmt, cst.Try):
        out += [h.body for h in stmt.handlers] + ([stmt.finalbody.body] if stmt.finalbody else [])
    return out


def grid_elements(grid: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The axes of a literal grid tuple `(a, b)`, or None for a callable or anything else."""
    if isinstance(grid, cst.Tuple):
        return [e.value for e in grid.elements]
    return None


def cdiv_parts(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(n, block) for `triton.cdiv(n, block)` (or `(n + block - 1) // block`), else None."""
    if isinstance(expr, cst.Call) and (dotted(expr.func) or "").endswith("cdiv") and len(positional(expr)) == 2:
        a, b = positional(expr)
        return a.value, b.value
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.FloorDivide):
        num = expr.left
        if (
            isinstance(num, cst.BinaryOperation)
            and isinstance(num.operator, cst.Subtract)
            and int_value(num.right) == 1
        ):
            inner = num.left
            added = isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Add)
            if added and same(inner.right, expr.right):
                return inner.left, expr.right
    return None


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


def pointer_params(kernel: Kernel) -> list[str]:
    """Parameters used as the base pointer of a load, store or atomic (in parameter order), by
    `pointer_bases`."""
    found: set[str] = set()
    for call in calls(kernel.node.body, "load", "store", *[e for e in EFFECTS if e.startswith("atomic")]):
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
