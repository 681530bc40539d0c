"""Resolve names in a module to canonical dotted names (`tl.load` -> `triton.language.load`).

Only import statements are read; nothing is imported. A few conventional aliases (`tl`, `triton`,
`torch`) resolve even without an import, so snippets in the editor still triage.
"""

from __future__ import annotations

import ast

CONVENTIONAL = {"tl": "triton.language", "triton": "triton", "torch": "torch"}


def import_map(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted name it was imported as, from every import in the module."""
    names = dict(CONVENTIONAL)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def qualname(node: ast.AST, names: dict[str, str]) -> str | None:
    """`tl.load` -> `triton.language.load`; None for anything that is not a dotted name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = names.get(node.id, node.id)
    return ".".join([base, *reversed(attrs)])
