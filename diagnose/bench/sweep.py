"""Benchmark sweeps: every entry of a suite through the harness, results into the store, resumable.

Score mode verifies and times each entry's `ModelNew` as given against eager and `torch.compile`.
Optimize mode runs the agent on each entry (`diagnose/bench/optimize.py`), its outputs kept beside
the store, never in the suite's folder. Entries run `jobs` at a time (each verification already runs
in its own worker processes). On a timed device the entries share it through a lock file beside the
store (`<store>.lock`, `diagnose.runtime.device_lock`): timing loops hold it alone, other device work
holds it together, so one entry's process starts, imports, compiles and comparisons overlap another's
timing and no two timings overlap. Host-side work of other entries (CPU, PCIe) still runs during a
timing; entries sized well above launch overhead do not feel it.

Other suite formats (`options.suite_format`: kernelbench, multikernelbench, tritonbench, kernelgen,
prtask) are listed and scored by their adapters (`diagnose/bench/suites/`), into the same store under
the suite name `FORMAT:FOLDER`; the loop, the resume rule and the store are the same. In optimize mode
(kernelbench, multikernelbench, tritonbench) the adapter only says what the agent runs on (a task file
it writes into `<store>.runs/<entry>/`: a solution with the suite's reference bound last; or a
TritonBench-G original as it is), and the agent runs through the same `optimize_one` as the default
format's entries, its rows made the same way, so one report and distribution table serve every suite.
Optimize mode verifies with diagnose's own tolerances: `--tolerance` profiles are for score mode. Rows of a target
that cannot be compiled for here (status `unavailable`) do not fail an entry. `options.tolerance`
names the tolerance profile every comparison uses (`diagnose/bench/suites/tolerance.py`).
"""

from __future__ import annotations

import dataclasses
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from diagnose import __version__
from diagnose.agent.state import Budget
from diagnose.bench import store
from diagnose.bench.optimize import optimize_file
from diagnose.bench.suite import Entry, load_suite
from diagnose.bench.suites import DEFAULT, adapter, tolerance
from diagnose.bench.suites.base import failed as failed_row
from diagnose.bench.suites.base import verify_rows
from diagnose.errors import DiagnoseError, UsageError
from diagnose.runtime.devices import timed
from diagnose.toolchain.placement import require
from diagnose.targets import DEFAULT_TARGET

MODES = ("score", "optimize")
LEFT = "not started (past --start-within)"


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
    suite_format: str = "npukernel"
    solutions: Path | None = None
    targets: tuple[str, ...] = ()
    tolerance: str = "default"
    device_lock: str | None = None  # set by the sweep for --jobs > 1 on a timed device
    memory_limit: int = 16 * 2**30  # bytes of host memory each worker may use (--memory-limit)
    # No entry starts later than this many seconds after the sweep began (--start-within): a sweep
    # bounded from outside (a device call's time limit) ends with its runs finished, none killed.
    start_within_s: float | None = None
    scale_factor: float | None = None  # datakernel: the TPC-H scale factor (--sf)
    kind: str | None = None  # datakernel: core or full tasks only (--kind); None: both


@dataclass(frozen=True)
class SweepSummary:
    ran: int
    skipped: int
    failed: int
    left: int = 0  # not started: past `start_within_s`


def fingerprint(device: str) -> str:
    """The toolchain part of a row's version: what changes the numbers when it changes."""
    import torch  # deferred: torch is heavy
    import triton  # deferred: triton is heavy

    name = torch.cuda.get_device_name(0) if device == "cuda" else device
    return f"diagnose {__version__}|torch {torch.__version__}|triton {triton.__version__}|{name}|{platform.python_version()}"


def sharing_device(options: SweepOptions, store_path: str | Path) -> SweepOptions:
    """The options with the device lock named when several entries will run at once on a timed device."""
    if options.jobs > 1 and timed(options.device):
        return dataclasses.replace(options, device_lock=str(Path(store_path).with_suffix(".lock")))
    return options


def score_entry(entry: Entry, options: SweepOptions) -> list[tuple[str, str, dict]]:
    return verify_rows(entry.path, None, options)


def optimize_one(path: Path, options: SweepOptions, out_dir: Path) -> list[tuple[str, str, dict]]:
    """The agent on one file (an entry, or what a suite adapter made of one), outputs in `out_dir`: the
    one agent path of every suite format in optimize mode."""
    # The sweep's --seeds and --no-compile reach the agent's verifications as they reach score mode's.
    budget = dataclasses.replace(options.budget, seeds=options.seeds, compile_baseline="compile" in options.baselines)
    try:
        return optimize_file(path, options.device, options.target, budget, out_dir, options.device_lock)
    except DiagnoseError as exc:
        return failed_row("load_error", str(exc))


def check_mode(options: SweepOptions) -> None:
    """Optimize mode verifies with diagnose's own tolerances (the agent's harness): a suite's tolerance
    profile is for score mode, where the suite's own verdict is reported beside diagnose's."""
    if options.mode == "optimize" and options.tolerance != "default":
        raise UsageError(f"--tolerance {options.tolerance} is for score mode; optimize mode verifies with "
                         "diagnose's own tolerances")


def sweep(suite_dir: str | Path, store_path: str | Path, options: SweepOptions,
          on_entry: Callable[[Entry, str], None] | None = None) -> SweepSummary:
    """Run every entry not yet done for this version; `on_entry(entry, outcome)` reports progress."""
    tolerance.check(options.tolerance)
    check_mode(options)
    if options.suite_format != DEFAULT:
        return sweep_suite(suite_dir, store_path, options, on_entry)
    if options.mode not in MODES:
        raise UsageError(f"unknown mode {options.mode!r}; choose score or optimize")
    require(options.device)
    options = sharing_device(options, store_path)
    suite_dir = Path(suite_dir)
    suite = suite_dir.resolve().name
    entries = load_suite(suite_dir, options.pattern)
    runs = Path(store_path).with_suffix(".runs")

    def score_one(entry: Entry) -> list[tuple[str, str, dict]]:
        return score_entry(entry, options) if options.mode == "score" else optimize_one(entry.path, options, runs / entry.id)

    return run_entries(suite, entries, score_one, store_path, options, on_entry)


def suite_tasks(suite_dir: str | Path, options: SweepOptions) -> list:
    """The tasks of a suite in another format (its adapter's `SuiteTask`s), after checking the mode."""
    module = adapter(options.suite_format)
    if options.mode not in module.MODES:
        raise UsageError(f"{options.suite_format} suites support --mode {' or '.join(module.MODES)}, "
                         f"not {options.mode!r}")
    root = Path(suite_dir)
    if not root.is_dir():
        raise UsageError(f"{root}: not a suite folder")
    tasks = module.load(root, options)
    if not tasks:
        raise UsageError(f"{root}: no {options.suite_format} tasks" + (f" match {options.pattern!r}" if options.pattern else ""))
    return tasks


def sweep_suite(suite_dir: str | Path, store_path: str | Path, options: SweepOptions,
                on_entry: Callable[[Entry, str], None] | None = None) -> SweepSummary:
    """A sweep of a suite in another format, scored by its adapter."""
    module = adapter(options.suite_format)
    tasks = suite_tasks(suite_dir, options)
    require(options.device)
    options = sharing_device(options, store_path)
    by_id = {t.entry.id: t for t in tasks}
    suite = f"{options.suite_format}:{Path(suite_dir).resolve().name}"
    runs = Path(store_path).with_suffix(".runs")

    def score_one(entry: Entry) -> list[tuple[str, str, dict]]:
        task = by_id[entry.id]
        try:
            if options.mode == "optimize":
                # The adapter says what the agent runs on (a file it writes into the entry's runs folder,
                # or the suite's own file); the agent, its budget and its rows are the same for all.
                folder = runs / entry.id
                return module.optimize_task(task, options, folder, lambda path: optimize_one(path, options, folder))
            return module.score(task, options)
        except (DiagnoseError, ValueError, OSError) as exc:  # bad input found while scoring: this task only
            return [("*", "failed", {"failure": {"kind": "load_error", "message": str(exc).splitlines()[0],
                                                 "log_tail": ""}, "failed_checks": []})]

    return run_entries(suite, [t.entry for t in tasks], score_one, store_path, options, on_entry)


def run_entries(suite: str, entries: list[Entry], score_one: Callable[[Entry], list[tuple[str, str, dict]]],
                store_path: str | Path, options: SweepOptions,
                on_entry: Callable[[Entry, str], None] | None) -> SweepSummary:
    """Score every entry not yet done for this version into the store, `jobs` at a time."""

    tail = fingerprint(options.device) + (f"|tolerance {options.tolerance}" if options.tolerance != "default" else "")
    connection = store.connect(store_path)
    todo = [e for e in entries
            if options.redo or not store.is_done(connection, suite, e.id, options.mode, f"{e.source_hash}|{tail}")]
    skipped = len(entries) - len(todo)
    for entry in entries:
        if entry not in todo and on_entry:
            on_entry(entry, "skipped (done)")
    jobs = max(1, options.jobs)
    failed = 0
    began = time.monotonic()

    def run_one(entry: Entry) -> str:
        if options.start_within_s is not None and time.monotonic() - began > options.start_within_s:
            return LEFT
        try:
            groups = score_one(entry)
        except Exception as exc:  # noqa: BLE001 - a bug of ours on one entry is its row, not the sweep's end
            groups = failed_row("internal_error", f"{type(exc).__name__}: {exc}")
        writer = store.connect(store_path)
        try:
            store.write_entry(writer, suite, entry.id, options.mode, f"{entry.source_hash}|{tail}", groups)
        finally:
            writer.close()
        return "passed" if all(status in ("passed", "unavailable") for _, status, _ in groups) else "failed"

    left = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for entry, outcome in zip(todo, pool.map(run_one, todo)):
            failed += outcome == "failed"
            left += outcome == LEFT
            if on_entry:
                on_entry(entry, outcome)
    connection.close()
    return SweepSummary(ran=len(todo) - left, skipped=skipped, failed=failed, left=left)
