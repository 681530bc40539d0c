"""`diagnose inspect --target ascend:*` as a plain function: validate, compile in the toolchain's
worker (or answer from the cache), extract the facts here, render.

`inspect_ascend(path, target, fmt, passes, stage, kernel) -> (exit code, stdout text)`; `ascend_facts(...)`
is the same result as data. The user's file is imported only inside a worker of the Ascend
toolchain's Python (`diagnose.ascend.worker:inspect_file`); this side imports neither torch nor triton. The worker's
result (artefacts, stage log, pass dumps) is stored in `<cache>/ascend/inspect/`, keyed by the
request, the toolchain, the relevant environment and diagnose's own worker-side code, and checked
against the hashes of the user files it came from; the facts are extracted from it on every call.

Exit codes: 0 when every kernel compiled as far as this machine allows, 1 when one did not, 2 for
bad input (`UsageError`), 3 when the toolchain is missing or its worker failed (`ToolchainError`).
The text always ends with what was not possible here (npubin without CANN, timing without an NPU).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from diagnose.ascend.facts import AscendFactContext, facts_for
from diagnose.ascend.render import render_text
from diagnose.ascend.summary import line_summary
from diagnose.errors import EXIT_FAILED, EXIT_OK, ToolchainError, UsageError
from diagnose.cache import cache_root, read_json, sha256_file, write_json_atomic
from diagnose.targets import lookup
from diagnose.toolchain import call, find_record
from diagnose.toolchain.specs import spec_for

ENTRY = "diagnose.ascend.worker:inspect_file"
TIMEOUT_S = float(os.environ.get("DIAGNOSE_IR_TIMEOUT_S", "600"))
RESULT_VERSION = 1
STAGES = ("source", "ttir", "ttadapter", "npubin")
# Environment that changes what a compile produces (Triton's knobs, MLIR's, triton-ascend's, CANN's).
ENV_PREFIXES = ("TRITON_", "MLIR_", "ASCEND_", "ENABLE_", "BISHENG")
# The code that runs in the worker: a change to it must not be answered from the cache.
WORKER_CODE = (
    "worker.py",
    "compile.py",
    "specialize.py",
    "pipeline.py",
    "options.py",
    "offline_driver.py",
    "environment.py",
)
PACKAGE = Path(__file__).resolve().parent


def inspect_ascend(
    path: str,
    target: str = "ascend:910b",
    fmt: str = "text",
    passes: bool = False,
    stage: str | None = None,
    kernel: str | None = None,
    options: dict | None = None,
) -> tuple[int, str]:
    """Run `diagnose inspect` for an Ascend target; (exit code, text for stdout)."""
    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {fmt!r}; formats: text, json")
    result = ascend_facts(path, target, passes, stage, kernel, options)
    code = EXIT_FAILED if any("error" in k for k in result["kernels"]) else EXIT_OK
    if fmt == "json":
        return code, json.dumps(
            {"schema": f"diagnose.ascend.inspect/{RESULT_VERSION}", **_lean(result, passes, stage)}, indent=1
        ) + "\n"
    return code, render_text(result, passes=passes, stage=stage)


def ascend_facts(
    path: str,
    target: str = "ascend:910b",
    passes: bool = False,
    stage: str | None = None,
    kernel: str | None = None,
    options: dict | None = None,
) -> dict:
    """The inspect result of an Ascend target as data: per kernel its artefacts, `evidence` (dicts) and
    per-line `summary`; a kernel that failed carries `error`. Bad input raises `UsageError`, a missing
    toolchain `ToolchainError`."""
    spec = lookup(target)
    if spec.backend != "npu":
        raise UsageError(f"{spec.name} is not an Ascend target (use the GPU inspect for it)")
    if stage and stage not in STAGES:
        raise UsageError(f"unknown Ascend stage {stage!r}; stages: {', '.join(STAGES)}")
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"no such file: {path}")
    if file.suffix != ".py":
        raise UsageError(f"not a Python file: {path}")
    record = find_record("ascend")
    if record is None:
        raise ToolchainError(
            f"{spec.name} needs the Ascend toolchain, which is not set up here: run `diagnose toolchain setup ascend`"
        )
    payload = {
        "path": str(file.resolve()),
        "target": spec.name,
        "passes": passes,
        "kernel": kernel,
        "options": options or {},
    }
    result = cached_result(payload, record)
    if result is not None:
        result["from_cache"] = True
    else:
        result = run_worker(payload, record)
        if not any("error" in k for k in result["kernels"]):
            store_result(payload, record, result)
        result["from_cache"] = False
    result["toolchain"] = dict(record.versions)
    result["npu"] = record.capabilities.get("npu")
    add_facts(result)
    return result


def add_facts(result: dict) -> None:
    """Put every kernel's facts (`evidence`, as dicts) and its per-line `summary` into `result`."""
    target = lookup(result["target"])
    for k in result["kernels"]:
        evidence = facts_for(AscendFactContext(k, target, k.get("source_path")))
        k["evidence"] = [e.to_dict() for e in evidence]
        k["summary"] = line_summary(evidence)


def run_worker(payload: dict, record) -> dict:
    """Run the Ascend worker; usage errors come back as UsageError, a broken worker as ToolchainError."""
    env = dict(spec_for("ascend").worker_env)
    result = call(ENTRY, payload, python=record.python, timeout_s=TIMEOUT_S, env=env)
    if not result.ok:
        failure = result.failure
        if failure.kind == "load_error":
            raise UsageError(failure.message.splitlines()[0] if failure.message else "cannot load the file")
        raise ToolchainError(
            f"the Ascend inspect worker failed ({failure.kind}): {failure.message}\n{failure.log_tail[-2000:]}"
        )
    value = result.value
    if "error" in value:
        raise UsageError(value["error"]["message"])
    return value


def _key(payload: dict, record) -> str:
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES))
    code = {name: sha256_file(PACKAGE / name) for name in WORKER_CODE}
    code["launch"] = sha256_file(PACKAGE.parent / "ir" / "launch.py")
    code["specialize"] = sha256_file(PACKAGE.parent / "ir" / "specialize.py")
    blob = json.dumps(
        [RESULT_VERSION, payload, sha256_file(payload["path"]), env, record.python, record.versions, code],
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _cache_file(payload: dict, record) -> Path:
    return cache_root() / "ascend" / "inspect" / f"{_key(payload, record)}.json"


def cached_result(payload: dict, record) -> dict | None:
    """A stored worker result for this request whose input files are unchanged, or None."""
    data = read_json(_cache_file(payload, record))
    if not data or any(sha256_file(f) != h for f, h in data.get("inputs", {}).items()):
        return None
    return data


def store_result(payload: dict, record, result: dict) -> None:
    write_json_atomic(_cache_file(payload, record), result)


def _lean(result: dict, passes: bool, stage: str | None) -> dict:
    """The JSON answer: artefacts only when a stage was asked for, snapshots only with passes."""
    kernels = []
    for k in result["kernels"]:
        k = dict(k)
        if not stage:
            k.pop("artefacts", None)
        if not passes:
            k.pop("snapshots", None)
        kernels.append(k)
    return {**result, "kernels": kernels}
