"""The Ascend toolchain's worker entries: import, capture launches, compile; return JSON.

Run by the toolchain's Python (`diagnose.toolchain.call(..., python=<ascend venv>)`), never by the
main environment's: they import triton-ascend's `triton`. Launches are found as the GPU layer finds
them (`diagnose.ir.launch`: a `DIAGNOSE_EXAMPLES` spec or a task's `ModelNew.forward`) and autotune
configs expanded the same way (`diagnose.ir.specialize.expand_configs`), with an offline stand-in
for the NPU driver active (`offline_driver.py`) so that user code asking for core counts works.

`inspect_file(payload)`; payload keys: `path`, `target` (`ascend:910b` | `ascend:950`), `passes`
(keep the IR after every pass), `kernel` (one kernel only), `options` (extra NPU options, e.g.
`{"compile_mode": "unstructured_in_simt"}`). It returns

    {"file", "target", "seconds", "inputs": {path: sha256}, "npubin": null | "why not",
     "kernels": [{"kernel", "title", "config", "label", "grid", "origin", "specialization", "options",
                  "stages": [{"name", "status": ok|failed|unavailable, "seconds", "message"?}],
                  "artefacts": {"source", "ttir", "ttadapter"}, "passes": [...], "snapshots": [...],
                  "stage_inputs", "pass_timing", "pipeline_matches_stage"?, "notes"?, "error"?}]}

or `{"error": {"kind": "usage", "message"}}` for bad input. A kernel that fails to compile gets an
`error` of its own and keeps the artefacts of the stages before. `inspect_files` does the same for
several files in one process (`{"results": [...]}`), which saves an interpreter start per file.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from pathlib import Path

from diagnose.ascend.compile import compile_launch
from diagnose.ir.launch import collect_launches
from diagnose.ir.specialize import expand_configs
from diagnose.toolchain.ascend_environment import npubin_blocker
from diagnose.ascend.offline_driver import offline_driver
from diagnose.errors import UsageError
from diagnose.cache import sha256_file
from diagnose.targets import lookup


def inspect_file(payload: dict) -> dict:
    try:
        return _inspect(payload)
    except UsageError as e:
        return {"error": {"kind": "usage", "message": str(e)}}


def inspect_files(payload: dict) -> dict:
    """`inspect_file` over `payload["paths"]` with the same other keys."""
    return {"results": [inspect_file({**payload, "path": path}) for path in payload["paths"]]}


def _inspect(payload: dict) -> dict:
    start = time.perf_counter()
    target = lookup(payload.get("target") or "ascend:910b")
    if target.backend != "npu":
        raise UsageError(f"{target.name} is not an Ascend target; the Ascend toolchain compiles ascend:* only")
    path = payload["path"]
    kernels = []
    with offline_driver(target):
        for launch in collect_launches(path, payload.get("kernel")):
            for concrete in expand_configs(launch):
                kernels.append(_inspect_one(concrete, target, payload))
    return {
        "file": str(Path(path).resolve()),
        "target": target.name,
        "kernels": kernels,
        "inputs": input_hashes(path),
        "npubin": npubin_blocker(),
        "seconds": time.perf_counter() - start,
    }


def _inspect_one(launch, target, payload: dict) -> dict:
    launch = dataclasses.replace(launch, config=config_label(launch.config))
    head = {
        "kernel": launch.kernel,
        "title": launch.title,
        "config": launch.config,
        "label": launch.label,
        "grid": list(launch.grid) if launch.grid else None,
        "origin": launch.origin,
        "source_path": launch.jit.fn.__code__.co_filename,
    }
    return {**head, **compile_launch(launch, target, bool(payload.get("passes")), payload.get("options"))}


# Config fields that exist on Ascend for GPU compatibility only, and values that mean "not set".
COMPAT_FIELDS = (
    "num_warps",
    "num_ctas",
    "num_stages",
    "num_buffers_warp_spec",
    "num_consumer_groups",
    "reg_dec_producer",
    "reg_inc_consumer",
    "maxnreg",
)
UNSET = ("None", "False")


def config_label(config: str) -> str:
    """triton-ascend's `str(Config)` lists every NPU option, mostly `None`: keep what was set.

    `BLOCK: 1024, num_warps: 4, ..., multibuffer: None, ...`  ->  `BLOCK: 1024`
    """
    parts = []
    for item in re.split(r",\s*", config):
        key, _, value = (x.strip() for x in item.partition(":"))
        if key and key not in COMPAT_FIELDS and value not in UNSET:
            parts.append(f"{key}: {value}")
    return ", ".join(parts)


def input_hashes(path: str) -> dict[str, str | None]:
    """Hashes of the user files a result depends on: the file and the user modules it imported."""
    root = Path(path).resolve().parent
    files = {str(Path(path).resolve())}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or "site-packages" in file or not file.endswith(".py"):
            continue
        try:
            resolved = Path(file).resolve()
        except OSError:
            continue
        if resolved.is_relative_to(root):
            files.add(str(resolved))
    return {f: sha256_file(f) for f in sorted(files)}
