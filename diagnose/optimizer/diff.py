"""A candidate's unified diff against the file it was made from, and the name it is written under.

A candidate of `kernel.py` is written as `kernel.diagnose.py` beside it (the user's file is never
overwritten unless asked); the diff names the two so that `patch -p1` and editors read it.
"""

from __future__ import annotations

import difflib
from pathlib import Path


def unified_diff(old: str, new: str, path: str) -> str:
    name = Path(path).name
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{output_name(name)}",
        )
    )


def output_name(name: str) -> str:
    stem = name[:-3] if name.endswith(".py") else name
    return f"{stem}.diagnose.py"
