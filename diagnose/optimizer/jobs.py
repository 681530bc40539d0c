"""Worker entries of the rewrite layer (each runs in a fresh subprocess through `diagnose.runtime.runner.call`).

- `static_batch`: for each candidate file, its launches on the device-sized input groups (captured
  on `meta` tensors), compiled offline for the target, their IR facts and their `KernelFeatures`
  (what the static estimate reads). One worker handles a batch of files so that torch and triton
  are imported once per batch.

Payload: `reference` (the original task), `candidates` (paths), `target`, `cache_root`, `groups`
(None: the task's device-sized groups). Returns `{"results": [{"path", "kernels": [...], "errors":
[...]}]}` where a kernel entry is `{"group", "kernel", "title", "grid", "features" | None, "facts"}`.
"""

from __future__ import annotations

import os

from diagnose.cache import CACHE_ENV
from diagnose.profiling.jobs import static_job


def static_batch(payload: dict) -> dict:
    if payload.get("cache_root"):
        os.environ[CACHE_ENV] = payload["cache_root"]
    results = []
    for path in payload["candidates"]:
        try:
            results.append({"path": path, **_static_one(payload, path)})
        except Exception as exc:  # noqa: BLE001 - one candidate that fails to load is that candidate's failure
            results.append({"path": path, "kernels": [], "errors": [f"{type(exc).__name__}: {exc}"[:500]]})
    return {"results": results}


def _static_one(payload: dict, path: str) -> dict:
    job = {
        "reference": payload["reference"],
        "candidate": path,
        "groups": payload.get("groups"),
        "target": payload["target"],
        "cache_root": payload.get("cache_root"),
        "sass": False,
    }
    return static_job(job)
