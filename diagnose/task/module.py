"""Reading a kernel module as it lies in its project, without running it.

A kernel module is any Python file with `@triton.jit` kernels (at module level, under
`triton.autotune` / `triton.heuristics`, or defined inside functions) and the host code that launches
them. To run it the way its project does, it is imported under its own dotted name from its package
root: `src/liger_kernel/ops/rms_norm.py` is `liger_kernel.ops.rms_norm` with `src/` on `sys.path`, so
that its relative and absolute imports of sibling modules work. The package root is the folder above
the topmost parent that has an `__init__.py` (a folder without one, inside a package, is a namespace
subpackage); a file outside any package is its own root.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from diagnose.jit import is_kernel, wrapped_by_assignment


@dataclass(frozen=True)
class ModuleIdentity:
    """Where a kernel module lives: its file, its dotted name and the folder that goes on `sys.path`."""

    path: Path
    name: str
    root: Path


def identity(path: Path) -> ModuleIdentity:
    path = path.resolve()
    parts = [path.stem]
    folder = path.parent
    # A folder without `__init__.py` inside a package is a namespace subpackage of it (Liger's
    # `ops/experimental/`): it is part of the dotted name too.
    while ((folder / "__init__.py").exists() or (folder.parent / "__init__.py").exists()) and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ModuleIdentity(path, ".".join(parts), folder)


def jit_functions(tree: ast.Module) -> tuple[str, ...]:
    """Names of every function made a kernel by `triton.jit` (a decorator at any depth, or an assignment
    at module level)."""
    wrapped = wrapped_by_assignment(tree)
    return tuple(node.name for node in ast.walk(tree) if is_kernel(node, wrapped))


def _root(node: ast.AST) -> str | None:
    """`add` for `add(x)`, `benchmark` for `benchmark.run(...)`, `kernel` for `kernel[grid](...)`."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _free_reads(definition: ast.AST) -> set[str]:
    """Names a function or class reads that it does not bind itself: the module globals it uses."""
    loads, stores, declared = set(), set(), set()
    for node in ast.walk(definition):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, ast.arg):
            stores.add(node.arg)
        elif isinstance(node, ast.Global):
            declared.update(node.names)
    return (loads | declared) - (stores - declared)


def _bound(node: ast.AST) -> set[str]:
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def import_time_work(tree: ast.Module) -> list[tuple[int, int]]:
    """Line ranges of module-level statements that run the module's own code when it is imported:
    demos, tests and benchmarks written at the top level (`output = add(x, y)`, `print(...)`,
    `result_gold = test_add()`, `benchmark.run(...)`), as tutorials and benchmark files have them,
    and the statements after them that read what they bound (`assert torch.allclose(y_triton, ...)`).

    A statement counts when it calls a function or class the module defines (or `print`) and, for an
    assignment, when no function or class of the module reads what it binds as a global
    (`_KERNEL = make_kernel()`, read by a host function, stays). `if __name__ == "__main__":` never runs
    on import and is left alone."""
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    read_in_definitions = set().union(
        *(_free_reads(d) for d in tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    )

    def runs_module_code(node: ast.AST) -> bool:
        return any(
            isinstance(c, ast.Call) and (_root(c.func) in defined or _root(c.func) == "print") for c in ast.walk(node)
        )

    out, left_out = [], set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            continue
        reads_left_out = any(
            isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in left_out for n in ast.walk(node)
        )
        if not runs_module_code(node) and not reads_left_out:
            continue
        bound = _bound(node)
        if bound & read_in_definitions and not reads_left_out:
            continue
        left_out |= bound
        out.append((node.lineno, node.end_lineno or node.lineno))
    return out


def without_import_time_work(source: str, tree: ast.Module) -> str:
    """The source with `import_time_work` statements turned into `pass`, line for line (so every other
    line keeps its number)."""
    lines = source.splitlines(True)
    for start, end in import_time_work(tree):
        lines[start - 1] = "pass  # diagnose: runs at import (a demo, test or benchmark); not replayed\n"
        for i in range(start, end):
            lines[i] = "# (diagnose: continued)\n" if lines[i].strip() else lines[i]
    return "".join(lines)
