"""Which pointer arguments of a kernel it only writes: outputs, whose memory holds nothing yet.

At launch time an output buffer (`torch.empty`) holds whatever the allocator left there, which can
look like data (small non-negative floats); reading a value range from it would make a replay draw
inputs from garbage. A parameter is written only when every use of it, followed through the
kernel's assignments, reaches the pointer of a `tl.store` or an atomic and none reaches a `tl.load`
or a call to another function (a helper may read it). Anything not understood counts as read.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from functools import lru_cache

from diagnose import syntax

WRITES = (
    "store",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_xchg",
    "atomic_cas",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
)


TYPE_ATTRIBUTES = ("dtype", "element_ty", "type")


@lru_cache(maxsize=256)
def written_only(fn) -> frozenset[str]:
    """The parameters of the Python function behind a `@triton.jit` kernel that it only writes."""
    try:
        tree = syntax.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if func is None:
        return frozenset()
    params = [a.arg for a in func.args.args]
    sources = {p: {p} for p in params}  # name -> the parameters its value comes from
    changed = True
    while changed:
        changed = False
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found = _params_in(node.value, sources)
                for target in targets:
                    for name in (t.id for t in ast.walk(target) if isinstance(t, ast.Name)):
                        if not found <= sources.setdefault(name, set()):
                            sources[name] |= found
                            changed = True
    written, read = set(), set()
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        pointer = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pointer"), None)
        if callee in WRITES and pointer is not None:
            written |= _params_in(pointer, sources)
            read |= set().union(
                *(
                    _params_in(a, sources)
                    for a in node.args[1:] + [k.value for k in node.keywords if k.arg != "pointer"]
                )
            )
        elif callee not in ("arange", "program_id", "num_programs", "cdiv", "where", "minimum", "maximum"):
            read |= set().union(set(), *(_params_in(a, sources) for a in node.args + [k.value for k in node.keywords]))
    return frozenset(written - read)


def _params_in(expr: ast.AST, sources: dict[str, set[str]]) -> set[str]:
    """The parameters `expr`'s value comes from; `p.dtype.element_ty` reads the type, not the memory."""
    found: set[str] = set()
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Attribute) and node.attr in TYPE_ATTRIBUTES:
            continue
        if isinstance(node, ast.Name):
            found |= sources.get(node.id, set())
        todo.extend(ast.iter_child_nodes(node))
    return found
