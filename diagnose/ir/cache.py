"""The project-local cache for IR work: where it lives and how it is marked.

`.diagnose_cache/ir/` under the current directory unless `DIAGNOSE_CACHE_DIR` (or the global
`--cache-dir`) names another root (the `ir/` folder is created inside it); `diagnose.knobs.cache_root`
is the one definition. The root gets a `.gitignore` holding `*` and a `CACHEDIR.TAG`
so that git and backup tools skip it. Two sub-folders:

- `kernels/`: Triton's own cache directory during our compiles, so every compile group
  (`<base32 hash>/<name>.{ttir,ttgir,llir,ptx,cubin,json}`) is keyed by Triton's hash over source,
  options, target, environment and Triton version; `diagnose.json` beside them holds what we add.
- `inspect/`: whole `inspect` results, keyed by the request and validated against the hashes of
  the user files they were computed from (the warm path, which never imports torch or triton).
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


def ir_cache_dir(sub: str) -> Path:
    path = cache_root() / "ir" / sub
    path.mkdir(parents=True, exist_ok=True)
    return path


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
