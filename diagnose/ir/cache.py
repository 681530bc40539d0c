"""The project-local cache for IR work: where it lives and how it is marked.

`ir/` in the project cache (`diagnose.cache`: where it lives, how its files are written). Two
sub-folders:

- `kernels/`: Triton's own cache directory during our compiles, so every compile group
  (`<base32 hash>/<name>.{ttir,ttgir,llir,ptx,cubin,json}`) is keyed by Triton's hash over source,
  options, target, environment and Triton version; `diagnose.json` beside them holds what we add.
- `inspect/`: whole `inspect` results, keyed by the request and validated against the hashes of
  the user files they were computed from (the warm path, which never imports torch or triton).
"""

from __future__ import annotations

from pathlib import Path

from diagnose.cache import cache_root


def ir_cache_dir(sub: str) -> Path:
    """`<project cache>/ir/<sub>/`, created."""
    path = cache_root() / "ir" / sub
    path.mkdir(parents=True, exist_ok=True)
    return path
