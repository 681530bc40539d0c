"""The host side: the functions that launch kernels, their launch sites, grids and host bindings.

A *launch site* is a statement `kernel[grid](args...)` (or `out = kernel[grid](args...)`) in a host
function, at any depth of its blocks; a *host binding* is `BLOCK = 128` (or `BM, BN = 32, 32`) in the
host, the literal a retune edits. Reading the kernels themselves lives in `source.py`, editing in `edit.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Sequence

import libcst as cst

from diagnose.jit import is_kernel_wrapper
from diagnose.rewrite.source import (
    Kernel,
    MEMO,
    assigned_names,
    code,
    dotted,
    int_value,
    is_jit_decorator,
    kernels,
    keyword,
    names,
    parsed,
    positional,
    same,
    simple_assignment,
    walk,
)


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
            if any(is_jit_decorator(d) for d in node.decorators):
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
