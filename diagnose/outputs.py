"""Checks on where a command will write, made before any work starts.

A report or an optimized kernel that cannot be written should cost a one-line usage error (exit 2) at
once, not a traceback after minutes of verification. Writability is tried for real (a temporary file
made and removed): permission bits say nothing when running as root, nor about read-only mounts.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from diagnose.errors import UsageError


def can_write_in(folder: Path) -> bool:
    """Whether a new file can be made in `folder`."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def check_folder(folder: Path, what: str, create: bool = False) -> None:
    """`folder` takes new files (made first, with its parents, when `create`); else `UsageError` naming
    `what` (an option, or what goes there)."""
    if create and not folder.exists():
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{what}: cannot create the folder {folder} ({exc.strerror})") from None
    if not folder.exists():
        raise UsageError(f"{what}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise UsageError(f"{what}: {folder} is not a folder")
    if not can_write_in(folder):
        raise UsageError(f"{what}: cannot write in {folder}")


def check_file(path: Path, what: str) -> None:
    """`path` can be written as a file: not a folder, in a folder that takes files; else `UsageError`."""
    if path.is_dir():
        raise UsageError(f"{what} {path}: is a folder; give a file path")
    check_folder(path.parent, f"{what} {path}")
