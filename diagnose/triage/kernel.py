"""What triage knows about one `@triton.jit` function: its parameters, autotune configs, and an index
of its body (calls by canonical name, parents, assignments, loops) built in one walk so rules are cheap.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from collections.abc import Callable
from functools import cached_property
from typing import Any, Iterator

from diagnose.triage.imports import qualname

TL = "triton.language."
REDUCTIONS = {
    TL + n
    for n in ("sum", "max", "min", "reduce", "argmax", "argmin", "xor_sum", "cumsum", "cumprod", "associative_scan")
}
# Calls whose result is a block (a tensor with a shape), as opposed to a scalar.
BLOCK_MAKERS = {
    TL + n
    for n in (
        "arange",
        "zeros",
        "full",
        "zeros_like",
        "full_like",
        "make_block_ptr",
        "broadcast_to",
        "make_tensor_descriptor",
        "reshape",
        "view",
        "rand",
        "randn",
        "randint",
        "cat",
        "join",
    )
}


@dataclass(frozen=True)
class Config:
    """One `triton.Config`: its kwargs (value, node) and launch options, as far as they are literal."""

    node: ast.Call
    kwargs: dict[str, tuple[Any, ast.AST]]
    num_warps: tuple[Any, ast.AST] | None = None
    num_stages: tuple[Any, ast.AST] | None = None


@dataclass
class Kernel:
    name: str
    node: ast.FunctionDef
    names: dict[str, str] = field(repr=False)
    params: tuple[str, ...] = ()
    constexprs: frozenset[str] = frozenset()
    defaults: dict[str, tuple[Any, ast.AST]] = field(default_factory=dict)
    configs: tuple[Config, ...] | None = None  # None: not autotuned; (): autotuned, configs unknown
    autotune: ast.Call | None = None
    do_not_specialize: frozenset[str] = frozenset()
    heuristics: frozenset[str] = frozenset()

    # the index ----------------------------------------------------------------------------------

    @cached_property
    def _index(self):
        calls: dict[str, list[ast.Call]] = {}
        parent: dict[ast.AST, ast.AST] = {}
        assigns: dict[str, list[ast.expr]] = {}
        loops: list[ast.For | ast.While] = []
        subscripts_none = False
        for node in ast.walk(self.node):
            for child in ast.iter_child_nodes(node):
                parent[child] = node
            if isinstance(node, ast.Call):
                name = qualname(node.func, self.names)
                if name is None and isinstance(node.func, ast.Attribute):
                    name = "." + node.func.attr  # method call on a value: x.to(...), ptr.dtype...
                calls.setdefault(name or "", []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name, value in _bindings(target, node.value):
                        assigns.setdefault(name, []).append(value)
            elif isinstance(node, (ast.For, ast.While)):
                loops.append(node)
                if isinstance(node, ast.For):
                    for name, _ in _bindings(node.target, node.iter):
                        assigns.setdefault(name, []).append(node.iter)
            elif isinstance(node, ast.Subscript) and _has_none_index(node.slice):
                subscripts_none = True
        for found in calls.values():
            found.sort(key=lambda c: (c.lineno, c.col_offset))
        loops.sort(key=lambda n: (n.lineno, n.col_offset))
        return calls, parent, assigns, loops, subscripts_none

    def calls(self, *names: str) -> list[ast.Call]:
        """Calls to `tl.<name>` (or a full dotted name, or `.method`), in source order."""
        out: list[ast.Call] = []
        for name in names:
            key = name if "." in name else TL + name
            out.extend(self._index[0].get(key, ()))
        return sorted(out, key=lambda c: (c.lineno, c.col_offset)) if len(names) > 1 else out

    @property
    def parent(self) -> dict[ast.AST, ast.AST]:
        return self._index[1]

    @property
    def assigns(self) -> dict[str, list[ast.expr]]:
        return self._index[2]

    @property
    def loops(self) -> list[ast.For | ast.While]:
        return self._index[3]

    @property
    def is_2d(self) -> bool:
        """Any `x[:, None]`-style indexing: the kernel works on 2-D tiles."""
        return self._index[4]

    @cached_property
    def has_dot(self) -> bool:
        return bool(self.calls("dot", "dot_scaled"))

    @cached_property
    def has_reduction(self) -> bool:
        return any(self._index[0].get(name) for name in REDUCTIONS)

    @property
    def is_elementwise(self) -> bool:
        return not (self.has_dot or self.has_reduction or self.is_2d)

    def qualname(self, node: ast.AST) -> str | None:
        return qualname(node, self.names)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parent:
            node = self.parent[node]
            yield node

    def enclosing_loop(self, node: ast.AST) -> ast.For | ast.While | None:
        return next((a for a in self.ancestors(node) if isinstance(a, (ast.For, ast.While))), None)

    # simple flow-insensitive dataflow ----------------------------------------------------------

    def sources(self, expr: ast.AST) -> set[str]:
        """Every name `expr` depends on, following assignments transitively (flow-insensitive)."""
        out: set[str] = set()
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id not in out:
                out |= self._name_sources(node.id)
        return out

    def _name_sources(self, name: str) -> frozenset[str]:
        cache = self.__dict__.setdefault("_sources_cache", {})
        if name not in cache:
            seen: set[str] = set()
            todo = [name]
            while todo:
                current = todo.pop()
                if current in seen:
                    continue
                seen.add(current)
                for value in self.assigns.get(current, ()):
                    todo.extend(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
            cache[name] = frozenset(seen)
        return cache[name]

    @cached_property
    def block_names(self) -> frozenset[str]:
        """Names that hold blocks (tensors): derived from `tl.arange`, `tl.zeros`, block loads..."""
        return self.names_where(Kernel.is_block)

    def names_where(self, holds: Callable[[Kernel, ast.AST, set[str]], bool]) -> frozenset[str]:
        """The names assigned a value for which `holds(kernel, value, names found so far)`, to a fixed
        point (a name assigned from one found is found in turn). Computed once per `holds` (a module
        function) and kernel: a rule passes its own notion of "a block" (one element taken out of a
        block is a scalar, ...)."""
        found = self._closures.get(holds)
        if found is None:
            names: set[str] = set()
            changed = True
            while changed:
                changed = False
                for name, values in self.assigns.items():
                    if name not in names and any(holds(self, v, names) for v in values):
                        names.add(name)
                        changed = True
            found = self._closures[holds] = frozenset(names)
        return found

    @cached_property
    def _closures(self) -> dict:
        return {}

    def is_block(self, expr: ast.AST, blocks: set[str] | frozenset[str] | None = None) -> bool:
        """Whether `expr` is a block rather than a scalar (reductions without an axis give scalars)."""
        blocks = self.block_names if blocks is None else blocks
        todo = [expr]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Name) and node.id in blocks:
                return True
            if isinstance(node, ast.Call):
                name = self.qualname(node.func)
                if name in BLOCK_MAKERS:
                    return True
                if name in REDUCTIONS:
                    continue  # a reduction's result is (usually) smaller; treat as scalar
            todo.extend(ast.iter_child_nodes(node))
        return False

    def loaded_names(self) -> set[str]:
        """Names assigned (somewhere) from an expression containing a `tl.load`: data, not indices."""
        loads = {id(c) for c in self.calls("load")}
        return {
            name for name, values in self.assigns.items() if any(id(n) in loads for v in values for n in ast.walk(v))
        }


def _bindings(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) pairs of an assignment; tuple targets pair up with tuple values when they can."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        pair = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
        for i, elt in enumerate(target.elts):
            if isinstance(elt, ast.Starred):
                elt = elt.value
            yield from _bindings(elt, value.elts[i] if pair else value)


def _has_none_index(node: ast.AST) -> bool:
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    return any(isinstance(e, ast.Constant) and e.value is None for e in elts) and len(elts) > 1
