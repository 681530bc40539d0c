"""`diagnose inspect` as a plain function: validate, answer from the cache or a worker, render.

`inspect_command(path, target, fmt, passes, diff_pass, stage, kernel) -> (exit code, stdout text)`;
`ir_facts(...)` is the same result as data, for the language server and other callers.
The user's file is imported only inside a worker process (`diagnose.runtime.runner.call` running
`diagnose.ir.inspect:inspect_file`); this side imports neither torch nor triton, so a warm answer,
read from `<cache>/ir/inspect/` and checked against the hashes of the user files it came from,
costs milliseconds. Exit codes: 0 when every kernel compiled, 1 when one did not, 2 for bad input
(`UsageError`: also the file's own code raising, or running past the worker's time limit), 3 when the
worker itself failed.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path

from diagnose.errors import EXIT_FAILED, EXIT_OK, DiagnoseError, UsageError
from diagnose.ir.render import render_text
from diagnose.knobs import Knobs
from diagnose.cache import cache_root, read_json, sha256_file, write_json_atomic
from diagnose.ir.cache import ir_cache_dir
from diagnose.ir.stages import STAGE_NAMES
from diagnose.runtime.runner import call
from diagnose.runtime.runner import user_failure
from diagnose.ir.stages import stage as stage_descriptor
from diagnose.targets import DEFAULT_TARGET, lookup
from diagnose.task.harness import header

ENTRY = "diagnose.ir.inspect:inspect_file"
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
    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {fmt!r}; formats: text, json")
    result = ir_facts(path, target, passes, diff_pass, stage, kernel)
    code = EXIT_FAILED if any("error" in k or cannot_launch(k) for k in result["kernels"]) else EXIT_OK
    if fmt == "json":
        return code, json.dumps({"schema": f"diagnose.ir.inspect/{RESULT_VERSION}", **result}, indent=1) + "\n"
    return code, render_text(result, passes=passes, diff_pass=diff_pass, stage=stage)


def cannot_launch(kernel: dict) -> bool:
    """Compiled, but the target would refuse to load it (Triton compiles a kernel over the shared memory
    limit offline and raises `OutOfResources` only when it is launched): as much a failure as a compile error."""
    return any(e.get("name") == "SharedMemoryOverLimit" for e in kernel.get("evidence", []))


def ir_facts(
    path: str,
    target: str = DEFAULT_TARGET,
    passes: bool = False,
    diff_pass: str | None = None,
    stage: str | None = None,
    kernel: str | None = None,
) -> dict:
    """The inspect result as data (from the cache when the file and toolchain are unchanged): per kernel
    its metadata, `evidence` (dicts) and stages; a kernel that failed carries `error`. Facts of a kernel
    module's task file are placed at the module's own lines. Bad input raises `UsageError`."""
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
    return at_origin(result, file)


def at_origin(result: dict, file: Path) -> dict:
    """A kernel module's task file (`diagnose/task/harness.py`) holds the module line for line: its facts
    are shown at the module's own path, where the user reads them."""
    found = header(file.read_text(errors="replace"))
    if found is None:
        return result
    here, there = str(file.resolve()), str(found.origin)

    def moved(evidence: dict) -> dict:
        location = evidence.get("location")
        if location and location.get("path") == here:
            return {**evidence, "location": {**location, "path": there}}
        return evidence

    kernels = [{**k, "evidence": [moved(e) for e in k.get("evidence", [])]} for k in result["kernels"]]
    return {**result, "file": there, "kernels": kernels}


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
    """Run `inspect_file` in a worker; usage errors come back as UsageError.

    Its time limit is `DIAGNOSE_IR_TIMEOUT_S` (600 s), or the command's `--timeout` (`DIAGNOSE_TIMEOUT_S`,
    which `call` puts in its place); a worker that runs out of it is a one-line `UsageError` too.
    """
    result = call(ENTRY, payload, timeout_s=Knobs.read().ir_timeout_s)
    if not result.ok:
        failure = result.failure
        if failure.kind == "load_error":
            raise UsageError(failure.message.splitlines()[0] if failure.message else "cannot load the file")
        why = user_failure(failure, payload["path"])
        if why:  # the user's file raised or hung: bad input, as for `check` and `optimize`
            raise UsageError(f"{payload['path']}: {why}")
        raise DiagnoseError(f"inspect worker failed ({failure.kind}): {failure.message}")
    value = result.value
    if "error" in value:
        raise UsageError(value["error"]["message"])
    return value
