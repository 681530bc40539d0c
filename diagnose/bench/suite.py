"""A benchmark suite: a folder of task files, each carrying a literal `ENTRY` dict of metadata.

`ENTRY = {"level": 1, "category": "math", "op": "abs", "source": "..."}` is read with `ast.literal_eval`,
so listing a suite never executes user code. Files whose name starts with `_` are helpers, not entries.
A KernelBench-style folder without `ENTRY` dicts loads too: level and category then come from the path
(`level1/...`), and the op from the file name.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from diagnose import syntax
from diagnose.errors import UsageError


@dataclass(frozen=True)
class Entry:
    """One task of a suite: its id (path relative to the suite), file, metadata and source hash."""

    id: str
    path: Path
    level: int | None
    category: str
    op: str
    source_hash: str


def read_entry_dict(tree: ast.Module) -> dict:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ENTRY" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def load_entry(path: Path, root: Path) -> Entry:
    source = path.read_bytes()
    try:
        tree = syntax.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}: syntax error in suite entry: {exc.msg}") from None
    meta = read_entry_dict(tree)
    relative = path.relative_to(root).with_suffix("").as_posix()
    level = meta.get("level")
    if level is None:
        found = re.search(r"level(\d+)", relative)
        level = int(found.group(1)) if found else None
    return Entry(
        id=relative,
        path=path,
        level=level,
        category=str(meta.get("category", path.parent.name)),
        op=str(meta.get("op", path.stem)),
        source_hash=hashlib.sha256(source).hexdigest()[:16],
    )


def matches(entry_id: str, pattern: str) -> bool:
    """Whether an entry id contains (or matches as a glob) the pattern, or one of its comma-separated parts."""
    return any(p in entry_id or Path(entry_id).match(p) for p in pattern.split(",") if p)


def load_suite(root: str | Path, pattern: str | None = None) -> list[Entry]:
    """The suite's entries, sorted by id; `pattern` keeps ids containing it (or matching a glob), or any
    of several comma-separated ones."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"{root}: not a suite folder")
    entries = [load_entry(p, root) for p in sorted(root.rglob("*.py")) if not p.name.startswith("_")]
    if pattern:
        entries = [e for e in entries if matches(e.id, pattern)]
    if not entries:
        raise UsageError(f"{root}: no suite entries" + (f" match {pattern!r}" if pattern else ""))
    return entries
