"""The project cache: where it lives, how it is marked, and how files in it are written and read.

`.diagnose_cache/` in the current folder unless `DIAGNOSE_CACHE_DIR` (or the global `--cache-dir`)
names another root; `diagnose.knobs.cache_root` is the one definition of where. On first use the root
gets a `.gitignore` holding `*` and a `CACHEDIR.TAG`, so that git and backup tools skip it. Every
layer that keeps something there (IR results, device ceilings, toolchain records, rewrite searches)
writes through a temporary file and a rename, so that another process never reads half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from diagnose import knobs

CACHE_ENV = knobs.CACHE_DIR
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by diagnose.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)


def cache_root() -> Path:
    """The cache root (created and marked on first use)."""
    root = knobs.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    for name, text in ((".gitignore", "*\n"), ("CACHEDIR.TAG", CACHEDIR_TAG)):
        marker = root / name
        if not marker.exists():
            marker.write_text(text)
    return root


def sha256_file(path: str | os.PathLike) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file and a rename, so readers (another process compiling the same
    kernel) never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomic(path: Path, data: Any) -> None:
    write_bytes_atomic(path, json.dumps(data).encode())


def read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
