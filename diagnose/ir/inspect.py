"""The worker side of `diagnose inspect`: import, capture, compile, extract; return JSON.

`inspect_file(payload)` runs in a fresh worker process (it imports the user's file, which runs user
code). Payload keys: `path`, `target`, `passes` (keep the IR after every pass and report the
timeline), `diff_pass`, `stage` (return that artefact annotated with source lines), `kernel`
(restrict to one kernel), `experiments` (controlled recompiles). It returns a JSON-able dict:

    {"file", "target", "kernels": [{"kernel", "title", "hash", "name", "grid", "specialization",
      "metadata", "cache_hit", "seconds", "evidence": [Evidence.to_dict()...], "summary": {...},
      "timeline"?, "diff"?, "stage"?, "error"?}], "inputs": {path: sha256}}

or `{"error": {"kind": "usage", "message": ...}}` for bad input. A kernel that fails to compile
gets an `error` entry of its own; the others are still reported.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from diagnose.errors import UsageError
from diagnose.cache import CACHE_ENV, sha256_file
from diagnose.ir.compile import CompileFailed, CompileRecord, compile_launch
from diagnose.ir.experiments import compare_option, default_variants
from diagnose.ir.facts import FactContext, facts_for
from diagnose.ir.launch import collect_launches, replay_error
from diagnose.ir.pass_analysis import pass_diff, timeline
from diagnose.ir.sourcemap import parse_asm_lines, parse_llir_lines, parse_mlir_ops, parse_sass_lines
from diagnose.ir.specialize import ArgumentsDoNotFit, ConcreteLaunch, expand_configs
from diagnose.ir.stages import STAGE_NAMES
from diagnose.ir.stages import stage as stage_descriptor
from diagnose.ir.summary import line_summary
from diagnose.records import Evidence, Location
from diagnose.targets import Target, lookup

METADATA_KEYS = ("num_warps", "num_stages", "num_ctas", "shared", "maxnreg", "global_scratch_size", "tmem_size")


def inspect_file(payload: dict) -> dict:
    """Entry point for `diagnose.runtime.runner.call("diagnose.ir.inspect:inspect_file", payload)`."""
    if payload.get("cache_root"):
        # This process is a fresh worker of ours: point it at the caller's cache.
        os.environ[CACHE_ENV] = payload["cache_root"]
    try:
        return _inspect(payload)
    except UsageError as e:
        return {"error": {"kind": "usage", "message": str(e)}}


def _inspect(payload: dict) -> dict:
    start = time.perf_counter()
    target = lookup(payload.get("target") or "cuda:sm90")
    if not target.can_compile_here:
        raise UsageError(f"{target.name}: cannot compile here (its toolchain, triton-ascend, is not installed)")
    stage = payload.get("stage")
    if stage and stage not in STAGE_NAMES:
        raise UsageError(f"unknown stage {stage!r}; stages: {', '.join(STAGE_NAMES)}")
    path = payload["path"]
    launches = collect_launches(path, payload.get("kernel"))
    snapshots = bool(payload.get("passes") or payload.get("diff_pass"))
    kernels = []
    for launch in launches:
        if launch.error:
            kernels.append(_failed(launch.kernel, launch.title, launch.error, "launch"))
            continue
        try:
            concretes = expand_configs(launch)
        except Exception as e:  # noqa: BLE001 - a project's own pruning or heuristics failing on this launch
            message = str(e) if isinstance(e, UsageError) else replay_error(e)
            kernels.append(_failed(launch.kernel, launch.title, message, "launch"))
            continue
        for concrete in concretes:
            try:
                kernels.append(_inspect_one(concrete, target, payload, snapshots))
            except ArgumentsDoNotFit as e:
                kernels.append(_failed(concrete.kernel, concrete.title, str(e), "launch"))
    return {
        "file": str(Path(path).resolve()),
        "target": target.name,
        "kernels": kernels,
        "inputs": _inputs(path),
        "seconds": time.perf_counter() - start,
    }


def _failed(kernel: str, title: str, message: str, stage: str) -> dict:
    """The entry of a kernel that has no compile: why, and at which step (`launch`: no launch of it)."""
    return {
        "kernel": kernel,
        "title": title,
        "config": "",
        "grid": None,
        "error": {"message": message, "stage": stage, "log": ""},
    }


def _inspect_one(launch: ConcreteLaunch, target: Target, payload: dict, snapshots: bool) -> dict:
    entry: dict[str, Any] = {
        "kernel": launch.kernel,
        "title": launch.title,
        "config": launch.config,
        "grid": launch.grid,
    }
    try:
        record = compile_launch(launch, target, snapshots=snapshots)
    except CompileFailed as e:
        entry["error"] = {"message": e.message, "stage": e.stage, "log": e.log[-4000:]}
        return entry
    evidence = facts_for(FactContext(record, target, launch.grid, launch.jit.fn.__code__.co_filename))
    if payload.get("experiments"):
        for option, values in default_variants(launch, record.metadata).items():
            try:
                evidence += compare_option(launch, target, option, values)
            except CompileFailed as e:
                entry.setdefault("notes", []).append(f"{option}={values}: {e.message}")
    entry.update(
        hash=record.hash,
        name=record.name,
        specialization=record.specialization,
        metadata={k: record.metadata.get(k) for k in METADATA_KEYS if record.metadata.get(k) is not None},
        pipelines=_pipelines(record),
        cache_hit=record.cache_hit,
        seconds=record.seconds,
        evidence=[e.to_dict() for e in evidence],
        summary=line_summary(evidence),
    )
    if payload.get("passes"):
        entry["timeline"] = [dict(asdict(row), changed=row.changed) for row in timeline(record)]
    if payload.get("diff_pass"):
        entry["diff"] = pass_diff(record, payload["diff_pass"])
    if payload.get("stage"):
        entry["stage"] = annotated_stage(record, payload["stage"], launch.jit.fn.__code__.co_filename)
    return entry


def _pipelines(record: CompileRecord) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for step in record.steps:
        out.setdefault(step.stage, []).append(step.name)
    return out


def annotated_stage(record: CompileRecord, stage: str, user_path: str) -> dict:
    """The artefact of `stage` as lines, each with the user line it maps to (or None)."""
    text = record.sass() if stage == "sass" else record.asm.get(stage)
    if text is None:
        raise UsageError(f"{record.target} has no {stage} artefact; stages: {', '.join(sorted(record.asm))}")
    parser = stage_descriptor(stage).parser
    if parser == "mlir":
        lines = {op.ir_line: op.location for op in parse_mlir_ops(text)}
    else:
        parse = {"llvm": parse_llir_lines, "sass": parse_sass_lines, "asm": parse_asm_lines}[parser]
        lines = {a.ir_line: a.location for a in parse(text)}
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        loc = lines.get(i)
        if loc and loc.path == record.source_path:
            loc = type(loc)(user_path, loc.line, loc.col)
        rows.append([loc.line if loc else None, Path(loc.path).name if loc else None, line])
    return {"stage": stage, "lines": rows}


def _inputs(path: str) -> dict[str, str | None]:
    """Hashes of the user files this result depends on: the file and the user modules it imported."""
    root = Path(path).resolve().parent
    files = {str(Path(path).resolve())}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and "site-packages" not in file and file.endswith(".py"):
            try:
                if Path(file).resolve().is_relative_to(root):
                    files.add(str(Path(file).resolve()))
            except OSError:
                continue
    return {f: sha256_file(f) for f in sorted(files)}


def evidence_from_dict(data: dict) -> Evidence:
    """The inverse of `Evidence.to_dict()` (args come back as tuples)."""
    loc = data.get("location")
    return Evidence(
        stage=data["stage"],
        source=data["source"],
        name=data["name"],
        kind=data["kind"],
        location=Location(**loc) if loc else None,
        args=tuple(tuple(a) for a in data.get("args", ())),
        raw=data.get("raw"),
    )
