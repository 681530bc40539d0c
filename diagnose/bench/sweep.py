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

`options.executor` says where entries run: `local` (this machine, `jobs` at a time) or `ray` (one at a
time on each device of a Ray cluster, longest first: `diagnose/bench/ray_executor.py`). Either way the
per-entry job is the same value (`EntryJob`, `SuiteJob`: picklable, so Ray can send it to its actors)
and the store is written here, on the driver.
"""

from __future__ import annotations

import dataclasses
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterator

from diagnose import __version__
from diagnose.agent.state import Budget
from diagnose.bench import ray_executor, store
from diagnose.bench.optimize import optimize_file
from diagnose.bench.suite import Entry, load_suite
from diagnose.bench.suites import DEFAULT, adapter, tolerance
from diagnose.bench.suites.base import SuiteTask, verify_rows
from diagnose.bench.suites.base import failed as failed_row
from diagnose.errors import DiagnoseError, UsageError
from diagnose.runtime.devices import timed
from diagnose.toolchain.placement import require
from diagnose.targets import DEFAULT_TARGET

MODES = ("score", "optimize")
EXECUTORS = ("local", "ray")
LEFT = "not started (past --start-within)"
Row = tuple[str, str, dict]


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
    executor: str = "local"  # where entries run: local, or ray (--executor)
    ray_address: str | None = None  # the Ray cluster's HOST:PORT (--address); None: a local Ray


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


def device_fingerprint(device: str) -> str:
    """The fingerprint where the device is, after checking it is usable there (what each Ray actor answers)."""
    require(device)
    return fingerprint(device)


def sharing_device(options: SweepOptions, store_path: str | Path) -> SweepOptions:
    """The options with the device lock named when several entries will run at once on a timed device."""
    if options.jobs > 1 and timed(options.device):
        return dataclasses.replace(options, device_lock=str(Path(store_path).with_suffix(".lock")))
    return options


def on_this_machine(options: SweepOptions, store_path: str | Path) -> SweepOptions:
    """The options after checking the device here, with its lock named when entries share it; a Ray sweep
    checks the device in each actor instead, and each actor runs one entry at a time."""
    if options.executor == "ray":
        return options
    require(options.device)
    return sharing_device(options, store_path)


def score_entry(entry: Entry, options: SweepOptions) -> list[tuple[str, str, dict]]:
    return verify_rows(entry.path, None, options)


@dataclass(frozen=True)
class EntryJob:
    """Scores (or optimizes) one entry of the default format: a value, not a closure, so Ray can ship it."""

    options: SweepOptions
    runs: Path  # optimize mode's outputs, one folder per entry

    def __call__(self, entry: Entry) -> list[Row]:
        if self.options.mode == "score":
            return score_entry(entry, self.options)
        return optimize_one(entry.path, self.options, self.runs / entry.id)


@dataclass(frozen=True)
class SuiteJob:
    """Scores (or optimizes) one task of a suite in another format, by its adapter."""

    options: SweepOptions
    tasks: dict[str, SuiteTask]  # by entry id
    runs: Path

    def __call__(self, entry: Entry) -> list[Row]:
        module, task, options = adapter(self.options.suite_format), self.tasks[entry.id], self.options
        try:
            if options.mode == "optimize":
                # The adapter says what the agent runs on (a file it writes into the entry's runs folder,
                # or the suite's own file); the agent, its budget and its rows are the same for all.
                folder = self.runs / entry.id
                return module.optimize_task(task, options, folder, lambda path: optimize_one(path, options, folder))
            return module.score(task, options)
        except (DiagnoseError, ValueError, OSError) as exc:  # bad input found while scoring: this task only
            return [
                (
                    "*",
                    "failed",
                    {
                        "failure": {"kind": "load_error", "message": str(exc).splitlines()[0], "log_tail": ""},
                        "failed_checks": [],
                    },
                )
            ]


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
        raise UsageError(
            f"--tolerance {options.tolerance} is for score mode; optimize mode verifies with diagnose's own tolerances"
        )


def check_executor(options: SweepOptions) -> None:
    """A known executor, its options, Ray installed when it is asked for, and its cluster's head answering."""
    if options.executor not in EXECUTORS:
        raise UsageError(f"unknown executor {options.executor!r}; choose local or ray")
    if options.executor == "local":
        if options.ray_address:
            raise UsageError("--address is for --executor ray")
        return
    if options.jobs > 1 and (options.ray_address or options.device != "cpu"):
        raise UsageError(
            "--jobs is for one machine (with Ray, the CPU devices of a local Ray): on a Ray "
            "cluster each device runs one entry at a time"
        )
    ray_executor.require_ray()
    if options.ray_address:
        ray_executor.reachable(options.ray_address)


def sweep(
    suite_dir: str | Path,
    store_path: str | Path,
    options: SweepOptions,
    on_entry: Callable[[Entry, str], None] | None = None,
) -> SweepSummary:
    """Run every entry not yet done for this version; `on_entry(entry, outcome)` reports progress."""
    tolerance.check(options.tolerance)
    check_mode(options)
    check_executor(options)
    if options.suite_format != DEFAULT:
        return sweep_suite(suite_dir, store_path, options, on_entry)
    if options.mode not in MODES:
        raise UsageError(f"unknown mode {options.mode!r}; choose score or optimize")
    options = on_this_machine(options, store_path)
    suite_dir = Path(suite_dir)
    entries = load_suite(suite_dir, options.pattern)
    job = EntryJob(options, Path(store_path).with_suffix(".runs"))
    return run_entries(suite_dir.resolve().name, entries, job, store_path, options, on_entry)


def suite_tasks(suite_dir: str | Path, options: SweepOptions) -> list:
    """The tasks of a suite in another format (its adapter's `SuiteTask`s), after checking the mode."""
    module = adapter(options.suite_format)
    if options.mode not in module.MODES:
        raise UsageError(
            f"{options.suite_format} suites support --mode {' or '.join(module.MODES)}, not {options.mode!r}"
        )
    root = Path(suite_dir)
    if not root.is_dir():
        raise UsageError(f"{root}: not a suite folder")
    tasks = module.load(root, options)
    if not tasks:
        raise UsageError(
            f"{root}: no {options.suite_format} tasks" + (f" match {options.pattern!r}" if options.pattern else "")
        )
    return tasks


def sweep_suite(
    suite_dir: str | Path,
    store_path: str | Path,
    options: SweepOptions,
    on_entry: Callable[[Entry, str], None] | None = None,
) -> SweepSummary:
    """A sweep of a suite in another format, scored by its adapter."""
    tasks = suite_tasks(suite_dir, options)
    options = on_this_machine(options, store_path)
    suite = f"{options.suite_format}:{Path(suite_dir).resolve().name}"
    job = SuiteJob(options, {t.entry.id: t for t in tasks}, Path(store_path).with_suffix(".runs"))
    return run_entries(suite, [t.entry for t in tasks], job, store_path, options, on_entry)


def rows_or_failure(score_one: Callable[[Entry], list[Row]], entry: Entry) -> list[Row]:
    """The entry's rows, or its `internal_error` row: a bug of ours on one entry is its row, not the sweep's end."""
    try:
        return score_one(entry)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return failed_row("internal_error", f"{type(exc).__name__}: {exc}")


def longest_first(entries: list[Entry], seconds: dict[str, float]) -> list[Entry]:
    """The entries in the order a Ray sweep hands them out, so that no long one starts last while the other
    devices idle: those never run first (largest file first: any of them may be the longest), then by the
    wall time of their last run (`store.wall_times`), longest first."""

    def size(entry: Entry) -> int:
        return entry.path.stat().st_size if entry.path.is_file() else 0

    return sorted(entries, key=lambda e: (e.id in seconds, -seconds[e.id] if e.id in seconds else -size(e)))


def run_entries(
    suite: str,
    entries: list[Entry],
    score_one: Callable[[Entry], list[Row]],
    store_path: str | Path,
    options: SweepOptions,
    on_entry: Callable[[Entry, str], None] | None,
) -> SweepSummary:
    """Score every entry not yet done for this version into the store: `jobs` at a time here, or one at a
    time on each device of a Ray cluster (then `score_one` must pickle: `EntryJob`, `SuiteJob`)."""
    job = partial(rows_or_failure, score_one)
    if options.executor != "ray":
        return record_entries(
            suite, entries, store_path, options, on_entry, fingerprint(options.device), partial(run_here, job, options)
        )
    with ray_executor.devices(
        options.ray_address, options.device, options.jobs, partial(device_fingerprint, options.device)
    ) as cluster:

        def on_ray(todo: list[Entry], record: Callable[[Entry, list[Row]], str]):
            with closing(store.connect(store_path)) as connection:
                seconds = store.wall_times(connection, suite, options.mode)
            return cluster.run(job, longest_first(todo, seconds), record, options.start_within_s)

        return record_entries(suite, entries, store_path, options, on_entry, cluster.fingerprint, on_ray)


def run_here(
    job: Callable[[Entry], list[Row]],
    options: SweepOptions,
    todo: list[Entry],
    record: Callable[[Entry, list[Row]], str],
) -> Iterator[tuple[Entry, str | None, str]]:
    """The local executor: (entry, outcome, "") in the entries' order, `options.jobs` running at a time,
    each written by `record` in its thread as it finishes; outcome None: not started (past start_within_s)."""
    began = time.monotonic()

    def run_one(entry: Entry) -> str | None:
        if options.start_within_s is not None and time.monotonic() - began > options.start_within_s:
            return None
        return record(entry, job(entry))

    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for entry, outcome in zip(todo, pool.map(run_one, todo)):
            yield entry, outcome, ""


def record_entries(
    suite: str,
    entries: list[Entry],
    store_path: str | Path,
    options: SweepOptions,
    on_entry: Callable[[Entry, str], None] | None,
    toolchain: str,
    execute: Callable[[list[Entry], Callable[[Entry, list[Row]], str]], Iterator[tuple[Entry, str | None, str]]],
) -> SweepSummary:
    """Run (`execute`) every entry not yet done for version `toolchain` and write each one's rows into the
    store in one transaction as it finishes; `on_entry(entry, outcome)` reports progress (and, on Ray, where)."""
    tail = toolchain + (f"|tolerance {options.tolerance}" if options.tolerance != "default" else "")
    connection = store.connect(store_path)
    todo = [
        e
        for e in entries
        if options.redo or not store.is_done(connection, suite, e.id, options.mode, f"{e.source_hash}|{tail}")
    ]
    connection.close()
    skipped = len(entries) - len(todo)
    for entry in entries:
        if entry not in todo and on_entry:
            on_entry(entry, "skipped (done)")

    def record(entry: Entry, groups: list[Row]) -> str:
        writer = store.connect(store_path)
        try:
            store.write_entry(writer, suite, entry.id, options.mode, f"{entry.source_hash}|{tail}", groups)
        finally:
            writer.close()
        return "passed" if all(status in ("passed", "unavailable") for _, status, _ in groups) else "failed"

    failed = left = 0
    for entry, outcome, where in execute(todo, record):
        outcome = outcome or LEFT
        failed += outcome not in ("passed", LEFT)  # failed, or lost on Ray (then not written)
        left += outcome == LEFT
        if on_entry:
            on_entry(entry, f"{outcome} on {where}" if where else outcome)
    return SweepSummary(ran=len(todo) - left, skipped=skipped, failed=failed, left=left)
