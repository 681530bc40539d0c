"""Benchmark sweeps: every entry of a suite through the harness, results into the store, resumable.

Score mode verifies and times each entry's `ModelNew` as given against eager and `torch.compile`.
Optimize mode runs the agent on each entry (`diagnose/bench/optimize.py`), its outputs kept beside
the store, never in the suite's folder. Entries run `jobs` at a time on the CPU (each verification already runs in its own worker
processes); on a device, one at a time, since timings must not share the device.
"""

from __future__ import annotations

import platform
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from diagnose import __version__
from diagnose.agent.state import Budget
from diagnose.bench import store
from diagnose.bench.optimize import optimize_entry
from diagnose.bench.suite import Entry, load_suite
from diagnose.errors import DiagnoseError, UsageError
from diagnose.records import Verdict
from diagnose.runtime.devices import require, timed
from diagnose.targets import DEFAULT_TARGET
from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, verify

MODES = ("score", "optimize")


@dataclass(frozen=True)
class SweepOptions:
    mode: str = "score"
    device: str = "cpu"
    jobs: int = 1
    pattern: str | None = None
    redo: bool = False
    seeds: int = 3
    timeout_s: float = 600.0
    baselines: tuple[str, ...] = ("eager", "compile")
    target: str = DEFAULT_TARGET
    budget: Budget = Budget()


@dataclass(frozen=True)
class SweepSummary:
    ran: int
    skipped: int
    failed: int


def fingerprint(device: str) -> str:
    """The toolchain part of a row's version: what changes the numbers when it changes."""
    import torch
    import triton

    name = torch.cuda.get_device_name(0) if device == "cuda" else device
    return f"diagnose {__version__}|torch {torch.__version__}|triton {triton.__version__}|{name}|{platform.python_version()}"


def group_rows(verdict: Verdict) -> list[tuple[str, str, dict]]:
    """One (group, status, data) per input group of the verdict."""
    failed_checks = [f"{c.name}: {c.detail}" for c in verdict.checks if not c.passed]
    if verdict.failure is not None or not verdict.cases:
        failure = verdict.failure.to_dict() if verdict.failure else None
        return [("*", "failed", {"failure": failure, "failed_checks": failed_checks})]
    out = []
    for group in dict.fromkeys(c.group for c in verdict.cases):
        cases = [c for c in verdict.cases if c.group == group]
        correct = all(c.passed for c in cases)
        status = "passed" if verdict.passed else "failed"
        medians = {t.variant: t.median_ms for t in verdict.timings if t.group == group}
        out.append((group, status, {
            "correct": correct,
            "max_abs_err": max((c.max_abs_err or 0.0) for c in cases),
            "reasons": sorted({c.reason for c in cases if c.reason}),
            "failed_checks": failed_checks,
            "medians_ms": medians,
            "stable": all(t.stable for t in verdict.timings if t.group == group and t.median_ms is not None),
            "speedup_vs_eager": verdict.speedups("eager").get(group),
            "speedup_vs_compile": verdict.speedups("compile").get(group),
            "timed": any(m is not None for m in medians.values()),
        }))
    return out


def score_entry(entry: Entry, options: SweepOptions) -> list[tuple[str, str, dict]]:
    try:
        task = load_task(entry.path)
        verdict = verify(task, CheckOptions(device=options.device, seeds=tuple(range(options.seeds)),
                                            timeout_s=options.timeout_s, baselines=options.baselines))
    except DiagnoseError as exc:
        return [("*", "failed", {"failure": {"kind": "load_error", "message": str(exc), "log_tail": ""},
                                 "failed_checks": []})]
    return group_rows(verdict)


def optimize_one(entry: Entry, options: SweepOptions, runs: Path) -> list[tuple[str, str, dict]]:
    try:
        return optimize_entry(entry, options.device, options.target, options.budget, runs)
    except DiagnoseError as exc:
        return [("*", "failed", {"failure": {"kind": "load_error", "message": str(exc), "log_tail": ""},
                                 "failed_checks": []})]


def sweep(suite_dir: str | Path, store_path: str | Path, options: SweepOptions,
          on_entry: Callable[[Entry, str], None] | None = None) -> SweepSummary:
    """Run every entry not yet done for this version; `on_entry(entry, outcome)` reports progress."""
    if options.mode not in MODES:
        raise UsageError(f"unknown mode {options.mode!r}; choose score or optimize")
    require(options.device)
    suite_dir = Path(suite_dir)
    suite = suite_dir.resolve().name
    entries = load_suite(suite_dir, options.pattern)
    tail = fingerprint(options.device)
    connection = store.connect(store_path)
    todo = [e for e in entries
            if options.redo or not store.is_done(connection, suite, e.id, options.mode, f"{e.source_hash}|{tail}")]
    skipped = len(entries) - len(todo)
    for entry in entries:
        if entry not in todo and on_entry:
            on_entry(entry, "skipped (done)")
    jobs = 1 if timed(options.device) else max(1, options.jobs)
    failed = 0

    runs = Path(store_path).with_suffix(".runs")

    def run_one(entry: Entry) -> str:
        groups = score_entry(entry, options) if options.mode == "score" else optimize_one(entry, options, runs)
        writer = store.connect(store_path)
        try:
            store.write_entry(writer, suite, entry.id, options.mode, f"{entry.source_hash}|{tail}", groups)
        finally:
            writer.close()
        return "passed" if all(status == "passed" for _, status, _ in groups) else "failed"

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for entry, outcome in zip(todo, pool.map(run_one, todo)):
            failed += outcome == "failed"
            if on_entry:
                on_entry(entry, outcome)
    connection.close()
    return SweepSummary(ran=len(todo), skipped=skipped, failed=failed)
