"""`diagnose inspect` as a plain function: validate, answer from the cache or a worker, render.

`inspect_command(path, target, fmt, passes, diff_pass, stage, kernel) -> (exit code, stdout text)`.
The user's file is imported only inside a worker process (`diagnose.runtime.call` running
`diagnose.ir.inspect:inspect_file`); this side imports neither torch nor triton, so a warm answer,
read from `<cache>/ir/inspect/` and checked against the hashes of the user files it came from,
costs milliseconds. Exit codes: 0 when every kernel compiled, 1 when one did not, 2 for bad input
(`UsageError`), 3 when the worker itself failed.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path

from diagnose.errors import EXIT_FAILED, EXIT_OK, DiagnoseError, UsageError
from diagnose.ir.cache import cache_root, ir_cache_dir, read_json, sha256_file, write_json_atomic
from diagnose.ir.stages import STAGE_NAMES
from diagnose.runtime import call
from diagnose.ir.stages import stage as stage_descriptor
from diagnose.targets import DEFAULT_TARGET, lookup

ENTRY = "diagnose.ir.inspect:inspect_file"
TIMEOUT_S = float(os.environ.get("DIAGNOSE_IR_TIMEOUT_S", "600"))
RESULT_VERSION = 1
# Environment that changes what a compile produces (Triton's knobs and the C++-read variables).
ENV_PREFIXES = ("TRITON_", "MLIR_", "LLVM_", "AMDGCN_", "NVPTX_", "DISABLE_LLVM_OPT", "USE_IR_LOC")


def inspect_command(
    path: str,
    target: str = DEFAULT_TARGET,
    fmt: str = "text",
    passes: bool = False,
    diff_pass: str | None = None,
    stage: str | None = None,
    kernel: str | None = None,
) -> tuple[int, str]:
    """Run `diagnose inspect` and return (exit code, text for stdout); bad input raises UsageError."""
    from diagnose.ir.render import render_text

    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {fmt!r}; formats: text, json")
    spec = lookup(target)
    if not spec.can_compile_here:
        raise UsageError(f"{spec.name}: cannot compile here (its toolchain, triton-ascend, is not installed)")
    if stage and stage not in STAGE_NAMES:
        raise UsageError(f"unknown stage {stage!r}; stages: {', '.join(STAGE_NAMES)}")
    if stage and spec.backend not in stage_descriptor(stage).backends:
        raise UsageError(f"{spec.name} has no {stage} stage")
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"no such file: {path}")
    if file.suffix != ".py":
        raise UsageError(f"not a Python file: {path}")
    payload = {
        "path": str(file.resolve()),
        "target": spec.name,
        "passes": passes,
        "diff_pass": diff_pass,
        "stage": stage,
        "kernel": kernel,
        "cache_root": str(cache_root().resolve()),
    }
    result = cached_result(payload)
    if result is not None:
        result["from_cache"] = True
    else:
        result = run_worker(payload)
        if not any("error" in k for k in result["kernels"]):
            store_result(payload, result)
        result["from_cache"] = False
    code = EXIT_FAILED if any("error" in k for k in result["kernels"]) else EXIT_OK
    if fmt == "json":
        return code, json.dumps({"schema": f"diagnose.ir.inspect/{RESULT_VERSION}", **result}, indent=1) + "\n"
    return code, render_text(result, passes=passes, diff_pass=diff_pass, stage=stage)


def _key(payload: dict) -> str:
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES))
    versions = {p: _version(p) for p in ("diagnose", "triton", "torch")}
    request = {k: v for k, v in payload.items() if k != "cache_root"}
    blob = json.dumps([RESULT_VERSION, request, sha256_file(payload["path"]), env, versions], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cached_result(payload: dict) -> dict | None:
    """A stored result for this request whose input files are unchanged, or None."""
    data = read_json(ir_cache_dir("inspect") / f"{_key(payload)}.json")
    if not data or any(sha256_file(f) != h for f, h in data.get("inputs", {}).items()):
        return None
    return data


def store_result(payload: dict, result: dict) -> None:
    write_json_atomic(ir_cache_dir("inspect") / f"{_key(payload)}.json", result)


def run_worker(payload: dict) -> dict:
    """Run `inspect_file` in a worker; usage errors come back as UsageError."""
    result = call(ENTRY, payload, timeout_s=TIMEOUT_S)
    if not result.ok:
        failure = result.failure
        if failure.kind == "load_error":
            raise UsageError(failure.message.splitlines()[0] if failure.message else "cannot load the file")
        raise DiagnoseError(f"inspect worker failed ({failure.kind}): {failure.message}")
    value = result.value
    if "error" in value:
        raise UsageError(value["error"]["message"])
    return value
