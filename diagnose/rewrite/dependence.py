"""Which names and memory accesses of a function may depend on one value (a block size), from its syntax.

Flow-insensitive and conservative, since a rewrite that trusts it changes the value:

- a name depends when one of its bindings reads a dependent name (every binding counts, in any order,
  so a loop's rebinding too), or sits in a loop or branch whose range or condition reads one;
- an access runs under the names of the loops and branches around it, and of every branch that
  holds an early `return` / `break` / `continue` anywhere in the function;
- `tl.program_id(axis)` and `tl.num_programs(axis)` depend for the grid `axes` whose extent is
  computed from the value (an axis it cannot read: when any axis is);
- in a host function (`host=True`), a `with` block runs its body once, as straight-line code
  (`with torch.cuda.device(x.device):` around a launch), its `as` targets bound from its items;
- what this does not follow (`with` in a kernel, `try`, a nested def, a walrus) binds dependent names.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.source import (
    assigned_names,
    int_value,
    is_tl_call,
    keyword,
    names,
    positional,
    program_calls,
    walk,
)

EXITS = (cst.Return, cst.Break, cst.Continue)


@dataclass(frozen=True)
class Dependence:
    """The names that may depend on `seed`, and each access with the names its running depends on."""

    seed: str
    axes: frozenset[int]
    names: frozenset[str]
    accesses: tuple[tuple[cst.Call, frozenset[str]], ...]

    def depends(self, expr: cst.CSTNode, context: frozenset[str] = frozenset()) -> bool:
        return bool((reads(expr, self.seed, self.axes) | context) & self.names)


def reads(expr: cst.CSTNode, seed: str, axes: frozenset[int]) -> set[str]:
    """The names `expr` reads, and `seed` where it reads a program id of one of the grid `axes`."""
    found = names(expr)
    for call in program_calls(expr, "program_id", "num_programs"):
        arg = keyword(call, "axis") or next(iter(positional(call)), None)
        axis = int_value(arg.value) if arg is not None else None
        if axis in axes or (axis is None and axes):
            found.add(seed)
    return found


def dependence(
    function: cst.FunctionDef,
    seed: str,
    axes: frozenset[int] = frozenset(),
    accesses: tuple[str, ...] = (),
    host: bool = False,
) -> Dependence:
    """What in `function` may depend on `seed`; `accesses` names the `tl` calls to report; `host`: the
    function is host code, whose `with` blocks are followed."""
    bound: dict[str, set[str]] = {}
    found: list[tuple[cst.Call, set[str]]] = []

    def bind(target: cst.CSTNode, read: set[str]) -> None:
        for name in names(target):
            bound.setdefault(name, set()).update(read)

    def note(node: cst.CSTNode, outer: set[str]) -> None:
        found.extend((c, outer) for c in walk(node) if is_tl_call(c, *accesses))

    def visit(nodes, outer: set[str]) -> None:
        for node in nodes:
            if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                visit(node.body, outer)
            elif isinstance(node, cst.Assign):
                for target in node.targets:
                    bind(target.target, outer | reads(node.value, seed, axes))
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and node.value is not None:
                bind(node.target, outer | reads(node.value, seed, axes) | names(node.target))
            elif isinstance(node, cst.For):
                inner = outer | reads(node.iter, seed, axes)
                bind(node.target, inner)
                note(node.iter, outer)
                visit(node.body.body, inner)
                visit(node.orelse.body.body if node.orelse else (), inner)
            elif isinstance(node, cst.With) and host:
                for item in node.items:
                    note(item.item, outer)
                    if item.asname is not None:
                        bind(item.asname.name, outer | reads(item.item, seed, axes))
                visit(node.body.body, outer)
            elif isinstance(node, (cst.If, cst.While)):
                inner = outer | reads(node.test, seed, axes)
                note(node.test, outer)
                visit(node.body.body, inner)
                if isinstance(node.orelse, cst.If):
                    visit([node.orelse], inner)
                elif node.orelse is not None:
                    visit(node.orelse.body.body, inner)
            elif not isinstance(node, cst.BaseSmallStatement):  # a compound statement not followed
                for name in assigned_names(node):
                    bound.setdefault(name, set()).add(seed)
                note(node, outer | {seed})
            if isinstance(node, cst.BaseSmallStatement):
                note(node, outer)

    visit(function.body.body, set())
    guards: set[str] = set()
    for node in walk(function.body):
        if isinstance(node, cst.NamedExpr):
            bind(node.target, {seed})
        if isinstance(node, (cst.If, cst.While)) and any(isinstance(n, EXITS) for n in walk(node)):
            guards |= reads(node.test, seed, axes)
    dependent = {seed}
    changed = True
    while changed:
        changed = False
        for name, read in bound.items():
            if name not in dependent and read & dependent:
                dependent.add(name)
                changed = True
    return Dependence(seed, axes, frozenset(dependent), tuple((c, frozenset(o | guards)) for c, o in found))
