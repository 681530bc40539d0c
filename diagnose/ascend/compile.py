"""Offline compile of one concrete launch with triton-ascend, stage by stage (toolchain worker side).

`triton.compile` would run every stage and fail at `npubin` without the CANN toolkit, so we drive
the backend's own stages by hand, as `triton.compile` does: `make_backend` -> `parse_options` ->
`add_stages` -> `ASTSource.make_ir` -> `ttir` -> `ttadapter` -> `npubin`. Each stage is timed; one
that this machine cannot run is reported as `unavailable` with the reason (`environment.py`), and
one that fails as `failed` with the compiler's stderr.

Three switches make the artefacts readable without changing the ops they hold:
- `TRITON_DISABLE_LINE_INFO=0` around the ttadapter stage (triton-ascend defaults it to true), so
  the stage passes `--mlir-print-debuginfo` and every op keeps its Python `file:line:col` (the
  text differs from a default compile's by its locations only);
- with `passes=True`, `MLIR_ENABLE_DUMP=1` / `MLIR_ENABLE_TIMING=1` around the TTIR stage, and a
  second run of `triton-adapter-opt` with the stage's pass list plus dump flags (`pipeline.py`);
- `ENABLE_PRINT_UB_BITS=1` around npubin, where bishengir then reports the UB it allocated.

The result is a JSON-able dict (see `worker.py`); the facts are extracted by the caller.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from diagnose.toolchain.ascend_environment import npubin_blocker
from diagnose.ascend.options import check_options, target_options
from diagnose.ascend.pipeline import (
    DUMP_FLAGS,
    adapter_pipeline,
    nesting,
    parse_timing,
    pass_seconds,
    pipeline_args,
    split_dumps,
)
from diagnose.ascend.specialize import build_source, describe_specialization
from diagnose.ir.remarks import capture_fd
from diagnose.ir.specialize import ConcreteLaunch
from diagnose.targets import Target

LOG_TAIL = 4000


class StageFailed(Exception):
    """A stage of the user's kernel failed: which, the one-line reason, and the compiler's output."""

    def __init__(self, stage: str, message: str, log: str = ""):
        super().__init__(message)
        self.stage, self.message, self.log = stage, message, log


@contextlib.contextmanager
def env_scope(**values: str) -> Iterator[None]:
    """Set environment variables for the duration of one stage (this worker is ours alone)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def compile_launch(launch: ConcreteLaunch, target: Target, passes: bool = False, options: dict | None = None) -> dict:
    """Compile `launch` for `target` to every stage possible here; artefacts, stage log, pass dumps."""
    from triton._C.libtriton import ir  # deferred: triton is heavy (this runs in the Ascend toolchain's worker)

    extra = {**target_options(target), **(options or {})}
    check_options(target, {**extra, **launch.kwargs})
    gpu_target = target.gpu_target()
    # The launch's own options win over the target's defaults, as they would on the device.
    source, npu_options = build_source(launch.jit, launch.args, {**extra, **launch.kwargs}, gpu_target)
    backend = _backend(gpu_target)
    stages: dict[str, Any] = {}
    backend.add_stages(stages, npu_options)
    entry: dict[str, Any] = {
        "specialization": describe_specialization(source),
        "options": _non_default_options(npu_options),
        "stages": [],
        "artefacts": {},
        "passes": [],
        "snapshots": [],
        "pass_timing": {},
    }
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    metadata = {"hash": source.hash(), "target": gpu_target, **npu_options.__dict__}
    try:
        _run_stages(source, npu_options, backend, stages, context, metadata, passes, entry)
    except StageFailed as e:
        entry["stages"].append(_stage(e.stage, "failed", 0.0, e.message))
        entry["error"] = {"stage": e.stage, "message": e.message, "log": e.log}
    if "ttadapter" not in stages:
        entry["notes"] = ["compile_mode simt_only: TTIR goes straight to bishengir, there is no ttadapter stage"]
    context.disable_multithreading()  # as triton.compile does before the context is dropped
    return entry


def _run_stages(source, npu_options, backend, stages: dict, context, metadata: dict, passes: bool, entry: dict) -> None:
    """source -> ttir -> ttadapter -> npubin, each timed and kept in `entry`; `StageFailed` on error."""
    start = time.perf_counter()
    try:
        module = source.make_ir(npu_options, backend.get_codegen_implementation(), backend.get_module_map(), context)
    except Exception as e:
        raise StageFailed("source", _first_line(e), _error_text(e)) from e
    entry["stages"].append(_stage("source", "ok", time.perf_counter() - start))
    entry["artefacts"]["source"] = str(module)
    for name, run in stages.items():
        if name == "npubin":
            entry["stages"].append(_npubin(run, module, metadata, entry))
            return
        start = time.perf_counter()
        try:
            module = _run_stage(name, run, module, metadata, passes, entry)
        except Exception as e:
            raise StageFailed(name, _first_line(e), _error_text(e)) from e
        entry["stages"].append(_stage(name, "ok", time.perf_counter() - start))
        entry["artefacts"][name] = module if isinstance(module, str) else str(module)
        if name == "ttadapter" and passes:
            _adapter_passes(entry, metadata)


def _backend(gpu_target: Any) -> Any:
    from triton.compiler.compiler import make_backend  # deferred: triton is heavy

    return make_backend(gpu_target)


def _run_stage(name: str, run: Any, module: Any, metadata: dict, passes: bool, entry: dict) -> Any:
    if name == "ttir" and passes:
        with env_scope(MLIR_ENABLE_DUMP="1", MLIR_ENABLE_TIMING="1"), capture_fd(2) as box:
            module = run(module, metadata)
        text = box.get("text", "")
        # MLIR_ENABLE_DUMP prints the module *before* each pass: the IR after pass i is the dump
        # before pass i+1, and after the last pass the stage's result.
        before = split_dumps(text, when="Before")
        if before:
            entry["stage_inputs"] = {**entry.get("stage_inputs", {}), "ttir": _keep(entry, before[0].ir)}
        afters = [d.ir for d in before[1:]] + [str(module)]
        parents = nesting(before, None, "Before")
        _record_passes(
            entry, "ttir", [(d.name, d.arg, ir) for d, ir in zip(before, afters)], parents, parse_timing(text)
        )
        return module
    if name == "ttadapter":
        with env_scope(TRITON_DISABLE_LINE_INFO="0"):
            return run(module, metadata)
    return run(module, metadata)


def _adapter_passes(entry: dict, metadata: dict) -> None:
    """Rerun triton-adapter-opt with the stage's pass list and dump flags; record every pass."""
    from triton.backends.ascend.utils import _get_triton_adapter_opt_path  # optional: triton-ascend only

    pipeline = adapter_pipeline(metadata)
    with tempfile.TemporaryDirectory(prefix="diagnose-adapter-") as tmp:
        src, dst = os.path.join(tmp, "kernel.ttir.mlir"), os.path.join(tmp, "kernel.ttadapter.mlir")
        with open(src, "w") as f:
            f.write(entry["artefacts"]["ttir"])  # what ttir_to_linalg writes: str() of the TTIR module
        command = [_get_triton_adapter_opt_path(), src, *pipeline, "-o", dst, *DUMP_FLAGS]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode != 0:
            entry.setdefault("notes", []).append(f"per-pass run of triton-adapter-opt failed: {proc.stderr[-400:]}")
            return
        with open(dst) as f:
            final = f.read()
    entry["pipeline"] = pipeline
    entry["pipeline_matches_stage"] = final == entry["artefacts"]["ttadapter"]
    entry["stage_inputs"] = {**entry.get("stage_inputs", {}), "ttadapter": _keep(entry, entry["artefacts"]["ttir"])}
    dumps = split_dumps(proc.stderr, when="After")
    parents = nesting(dumps, pipeline_args(pipeline), "After")
    _record_passes(entry, "ttadapter", [(d.name, d.arg, d.ir) for d in dumps], parents, parse_timing(proc.stderr))


def _record_passes(entry: dict, stage: str, runs: list[tuple[str, str, str]], parents: list, timing: list) -> None:
    """Append the passes of one stage; `parent` is the global index of the pass that ran a nested one."""
    first = len(entry["passes"])
    seconds = pass_seconds([name for name, _, _ in runs], timing)
    for (name, arg, ir), secs, parent in zip(runs, seconds, parents):
        entry["passes"].append(
            {
                "index": len(entry["passes"]),
                "stage": stage,
                "name": name,
                "arg": arg,
                "seconds": secs,
                "parent": None if parent is None else first + parent,
                "snapshot": _keep(entry, ir),
            }
        )
    entry["pass_timing"][stage] = [[t.name, t.seconds, t.depth] for t in timing]


def _keep(entry: dict, text: str) -> int:
    """Store a snapshot once: a pass that changed nothing shares its predecessor's."""
    snapshots = entry["snapshots"]
    if snapshots and snapshots[-1] == text:
        return len(snapshots) - 1
    snapshots.append(text)
    return len(snapshots) - 1


def _npubin(run: Any, module: Any, metadata: dict, entry: dict) -> dict:
    """The binary stage where CANN is installed; `unavailable` with the reason elsewhere."""
    blocker = npubin_blocker()
    if blocker is not None:
        return _stage("npubin", "unavailable", 0.0, f"not available here: {blocker}")
    start = time.perf_counter()
    try:
        with env_scope(ENABLE_PRINT_UB_BITS="1"):
            binary = run(module, metadata)
    except Exception as e:
        raise StageFailed("npubin", _first_line(e), _error_text(e)) from e
    entry["npubin"] = {
        "bytes": len(binary),
        "required_ub_bits": metadata.get("required_ub_bits"),
        "mix_mode": metadata.get("mix_mode"),
    }
    return _stage("npubin", "ok", time.perf_counter() - start)


def _stage(name: str, status: str, seconds: float, message: str = "", log: str = "") -> dict:
    out = {"name": name, "status": status, "seconds": round(seconds, 4)}
    if message:
        out["message"] = message
    if log:
        out["log"] = log
    return out


def _non_default_options(options: Any) -> dict:
    """The NPU options that differ from NPUOptions' defaults (what this compile chose)."""
    defaults = type(options)()
    return {k: _plain(v) for k, v in options.__dict__.items() if getattr(defaults, k) != v}


def _plain(value: Any) -> Any:
    if isinstance(value, (int, float, bool, str, type(None))):
        return value
    return str(value)


def _error_text(e: BaseException) -> str:
    stderr = getattr(e, "stderr", None)
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    return ((stderr or "") + "\n" + f"{type(e).__name__}: {e}").strip()[-LOG_TAIL:]


def _first_line(e: BaseException) -> str:
    stderr = getattr(e, "stderr", None)
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    for line in (stderr or "").splitlines():
        if "error" in line.lower():
            return line.strip()[:300]
    text = [line for line in str(e).strip().splitlines() if line.strip()] or [type(e).__name__]
    summary = text[0] if len(text) == 1 else f"{text[0]} {text[-1].strip()}"
    return f"{type(e).__name__}: {summary}"[:400]
