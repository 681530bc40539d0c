"""Local clean-ups on a straight-line list of kernel statements, shared by rewrites that unroll loops.

After a loop that runs exactly once is replaced by its body, the passes of a multi-pass kernel repeat
work: the same `start = 0` and `mask = ...`, the same row loaded again. Two exact clean-ups remove it:

- `drop_repeated_assignments`: `name = expr` when `name` already holds `expr` (the same expression
  over the same versions of its names and, for loads, with no write to memory in between);
- `share_loads`: a `tl.load(...)` evaluated twice with equal arguments and no write in between is
  evaluated once, into a variable both uses read.

Only top-level simple statements are looked into; a compound statement (`if`, `for`) is opaque: it
invalidates every name it binds and, if it has effects, every load. Statements a clean-up drops
hand their comment lines to the next statement.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import replace, statement, unique_name
from diagnose.rewrite.source import assigned_names, calls, code, has_effects, names, norm, simple_assignment


@dataclass
class _State:
    """Versions of names and the memory epoch while walking the statements in order."""

    version: dict
    epoch: int = 0

    def key(self, expr: cst.CSTNode) -> tuple:
        loads = bool(calls(expr, "load"))
        deps = tuple(sorted((n, self.version[n]) for n in names(expr)))
        return norm(expr), deps, self.epoch if loads else None

    def after(self, stmt: cst.CSTNode) -> None:
        for name in assigned_names(stmt):
            self.version[name] += 1
        if has_effects(stmt):
            self.epoch += 1


def drop_repeated_assignments(stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    state = _State(defaultdict(int))
    holds: dict[str, tuple] = {}
    out: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    for stmt in stmts:
        target, value = simple_assignment(stmt)
        if target is not None and not has_effects(stmt):
            key = state.key(value)
            if holds.get(target) == key:
                carried += list(stmt.leading_lines)
                continue
            state.after(stmt)
            holds[target] = key
        else:
            for name in assigned_names(stmt):
                holds.pop(name, None)
            state.after(stmt)
        if carried:
            stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
            carried = []
        out.append(stmt)
    return out


def _load_sites(stmts: list[cst.BaseStatement]):
    """key -> [(statement index, load call)] and the name versions before each statement."""
    state = _State(defaultdict(int))
    sites: dict[tuple, list[tuple[int, cst.Call]]] = defaultdict(list)
    before: list[dict] = []
    for i, stmt in enumerate(stmts):
        before.append(dict(state.version))
        if isinstance(stmt, cst.SimpleStatementLine):
            for call in calls(stmt, "load"):
                if len(calls(call, "load")) == 1:  # innermost loads only (a gather's index load stays)
                    sites[state.key(call)].append((i, call))
        state.after(stmt)
    before.append(dict(state.version))
    return sites, before


def share_loads(stmts: list[cst.BaseStatement], taken: set[str]) -> list[cst.BaseStatement]:
    for _ in range(32):  # one shared load per round; a kernel has few
        sites, before = _load_sites(stmts)
        repeated = [(k, v) for k, v in sites.items() if len({i for i, _ in v}) > 1]
        if not repeated:
            return stmts
        _, uses = repeated[0]
        first_index, first_call = uses[0]
        target, value = simple_assignment(stmts[first_index])
        reusable = value is first_call and all(
            before[i].get(target, 0) == before[first_index + 1].get(target, 0) for i, _ in uses[1:]
        )
        stmts = list(stmts)
        if reusable:
            name = target
            rest = uses[1:]
        else:
            name = unique_name(taken, _tile_name(first_call))
            taken.add(name)
            rest = uses
            stmts.insert(
                first_index,
                statement(f"{name} = {code(first_call)}").with_changes(leading_lines=stmts[first_index].leading_lines),
            )
            stmts[first_index + 1] = stmts[first_index + 1].with_changes(leading_lines=[])
        shift = 0 if reusable else 1
        for i, call in rest:
            index = i + shift if i >= first_index else i
            stmts[index] = _replace_in(stmts[index], call, cst.Name(name))
    return stmts


def _replace_in(stmt: cst.BaseStatement, old: cst.CSTNode, new: cst.CSTNode) -> cst.BaseStatement:
    module = cst.Module(body=[stmt])
    return replace(module, {old: new}).body[0]


def _tile_name(load: cst.Call) -> str:
    """`x_row_tile` for `tl.load(x_row + start + cols, ...)`: named after the pointer's base."""
    pointer = load.args[0].value if load.args else None
    node = pointer
    while isinstance(node, cst.BinaryOperation):
        node = node.left
    base = node.value if isinstance(node, cst.Name) else "row"
    return f"{base.removesuffix('_ptr')}_tile"
