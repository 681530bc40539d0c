"""Worker entries of the rewrite layer (each runs in a fresh subprocess through `diagnose.runtime.call`).

- `static_batch`: for each candidate file, its launches on the device-sized input groups (captured
  on `meta` tensors), compiled offline for the target, their IR facts and, when the profiling layer
  is there, its `KernelFeatures` (what the static estimate reads). One worker handles a batch of
  files so that torch and triton are imported once per batch.

Payload: `reference` (the original task), `candidates` (paths), `target`, `cache_root`, `groups`
(None: the task's device-sized groups). Returns `{"results": [{"path", "kernels": [...], "errors":
[...]}]}` where a kernel entry is `{"group", "kernel", "title", "grid", "features" | None, "facts"}`.
"""

from __future__ import annotations

import os


def static_batch(payload: dict) -> dict:
    from diagnose.cache import CACHE_ENV

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
    job = {"reference": payload["reference"], "candidate": path, "groups": payload.get("groups"),
           "target": payload["target"], "cache_root": payload.get("cache_root"), "sass": False}
    try:
        from diagnose.profiling.jobs import static_job
    except ImportError:  # the profiling layer is optional to this one
        return _facts_only(job)
    return static_job(job)


def _facts_only(job: dict) -> dict:
    """Compile and IR facts without the profiling layer's features (the placeholder ranking's input)."""
    from diagnose.ir.compile import CompileFailed, compile_launch
    from diagnose.ir.facts import FactContext, facts_for
    from diagnose.ir.launch import collect_launches
    from diagnose.ir.specialize import expand_configs
    from diagnose.targets import lookup

    target = lookup(job["target"])
    kernels, errors = [], []
    for launch in collect_launches(job["candidate"]):
        for concrete in expand_configs(launch):
            try:
                record = compile_launch(concrete, target)
            except CompileFailed as exc:
                errors.append(f"{concrete.title}: {exc.message}")
                continue
            facts = facts_for(FactContext(record, target, concrete.grid, concrete.jit.fn.__code__.co_filename))
            kernels.append({"group": "example", "kernel": concrete.kernel, "title": concrete.title,
                            "grid": list(concrete.grid) if concrete.grid else None, "features": None,
                            "facts": [e.to_dict() for e in facts]})
    return {"kernels": kernels, "errors": errors}
