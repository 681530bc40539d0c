"""Driving Nsight Compute from Python: profile a task's kernels in a worker, export the CSV pages.

One `ncu` run per task and input group:

    ncu --clock-control none --target-processes all --profile-from-start off
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy
        --section LaunchStats --section WarpStateStats --section SourceCounters
        --kernel-name regex:^(softmax_kernel)$ --launch-count 16 --import-source yes -f -o DIR/report
        python -m diagnose.runtime.worker REQUEST RESULT

The worker (`jobs.ncu_target_job`) builds `ModelNew`, runs one warm-up forward (JIT compile, caches)
and then one forward between `cudaProfilerStart` / `cudaProfilerStop`, so only that forward's launches
are profiled (`--profile-from-start off`); `--kernel-name` keeps them to the task's own kernels.
`--clock-control none` leaves the clocks as they are (the lent machines' rule, and what the timings
saw). Then the report is exported: `--page raw --csv --print-units base` (every metric per launch)
and, per kernel, `--page source --csv --print-source sass` (per-instruction counters), plus
`--page details --csv` for a reader. Everything lands in `DIR` (`ncu_raw.csv`, `ncu_details.csv`,
`ncu_source_<kernel>.csv`, `ncu.log`), so a run can be parsed again later without a device.

ncu is found as `$DIAGNOSE_NCU`, on `PATH`, or under `/opt/nvidia/nsight-compute/*/` and
`/usr/local/cuda/bin/`.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from diagnose.records import Record
from diagnose.runtime.runner import worker_env

SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats", "WarpStateStats", "SourceCounters")
ENTRY = "diagnose.profiling.jobs:ncu_target_job"
LAUNCH_COUNT = 16
NCU_ENV = "DIAGNOSE_NCU"


@dataclass(frozen=True)
class NcuRun(Record):
    """What one ncu run left in its folder (texts of the exported pages), or why it failed."""

    folder: str
    raw_csv: str | None = None
    details_csv: str | None = None
    source_csv: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    wall_s: float = 0.0


def find_ncu() -> str | None:
    for candidate in (
        os.environ.get(NCU_ENV),
        shutil.which("ncu"),
        *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True),
        "/usr/local/cuda/bin/ncu",
    ):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def profile_command(ncu: str, kernels: list[str], report: Path, request: Path, result: Path) -> list[str]:
    sections = [arg for name in SECTIONS for arg in ("--section", name)]
    names = "|".join(kernels)
    return [
        ncu,
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",
        *sections,
        "--kernel-name",
        f"regex:^({names})$",
        "--launch-count",
        str(LAUNCH_COUNT),
        "--import-source",
        "yes",
        "-f",
        "-o",
        str(report),
        sys.executable,
        "-m",
        "diagnose.runtime.worker",
        str(request),
        str(result),
    ]


def _run(cmd: list[str], timeout_s: float, env: dict | None = None, log=None) -> tuple[int, str]:
    """Run a command in its own process group; kill the group at the deadline."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return 124, (out or "") + f"\n[killed after {timeout_s:g} s]"
    return proc.returncode, out or ""


def run_ncu(payload: dict, kernels: list[str], folder: str | Path, timeout_s: float = 300.0) -> NcuRun:
    """Profile the launches `jobs.ncu_target_job(payload)` makes; export the pages into `folder`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ncu = find_ncu()
    if ncu is None:
        return NcuRun(str(folder), error="ncu (Nsight Compute) not found: set DIAGNOSE_NCU or put ncu on PATH")
    if not kernels:
        return NcuRun(str(folder), error="the task defines no @triton.jit kernel to profile")
    start = time.monotonic()
    request, result, report = folder / "request.json", folder / "result.json", folder / "report"
    request.write_text(json.dumps({"entry": ENTRY, "payload": payload}))
    result.unlink(missing_ok=True)
    code, log = _run(profile_command(ncu, kernels, report, request, result), timeout_s, worker_env(False, None))
    logs = [f"$ ncu profile (exit {code})", log[-20000:]]
    rep = report.with_suffix(".ncu-rep")
    worker = json.loads(result.read_text()) if result.exists() else None
    error = None
    if worker is not None and not worker.get("ok"):
        error = f"the profiled worker failed: {worker.get('kind')}: {worker.get('message')}"
    elif not rep.exists():
        error = f"ncu wrote no report (exit {code}): {_last_line(log)}"
    raw = details = None
    sources: list[tuple[str, str]] = []
    if rep.exists():
        left = lambda: max(10.0, timeout_s - (time.monotonic() - start))
        raw = _export(
            ncu, rep, ["--page", "raw", "--csv", "--print-units", "base"], folder / "ncu_raw.csv", left(), logs
        )
        details = _export(
            ncu, rep, ["--page", "details", "--csv", "--print-units", "base"], folder / "ncu_details.csv", left(), logs
        )
        for kernel in kernels:
            base = ["--page", "source", "--csv", "--print-source", "sass"]
            text = _export(
                ncu,
                rep,
                [*base, "--kernel-name", kernel, "--launch-count", "1"],
                folder / f"ncu_source_{kernel}.csv",
                left(),
                logs,
            )
            if not text or "Address" not in text:
                text = _export(ncu, rep, base, folder / f"ncu_source_{kernel}.csv", left(), logs)
            if text:
                sources.append((kernel, text))
            # ncu's own line attribution (file and line from the cubin's line table), kept for a reader:
            # the join above maps inlined tl.* code to the user's line, which this view does not.
            _export(
                ncu,
                rep,
                ["--page", "source", "--csv", "--print-source", "cuda", "--kernel-name", kernel, "--launch-count", "1"],
                folder / f"ncu_source_cuda_{kernel}.csv",
                left(),
                logs,
            )
        if raw is None and error is None:
            error = "ncu exported no raw page"
    (folder / "ncu.log").write_text("\n".join(logs))
    return NcuRun(str(folder), raw, details, tuple(sources), error, time.monotonic() - start)


def _export(ncu: str, rep: Path, args: list[str], out: Path, timeout_s: float, logs: list[str]) -> str | None:
    code, text = _run([ncu, "--import", str(rep), *args], timeout_s)
    logs.append(f"$ ncu --import {rep.name} {' '.join(args)} (exit {code}, {len(text)} chars)")
    if code != 0:
        logs.append(text[-4000:])
        return None
    out.write_text(text)
    return text


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def load_run(folder: str | Path) -> NcuRun:
    """The pages an earlier `run_ncu` left in `folder`, read back (no ncu needed)."""
    folder = Path(folder)

    def text(name: str) -> str | None:
        path = folder / name
        return path.read_text() if path.exists() else None

    sources = tuple(
        (p.stem[len("ncu_source_") :], p.read_text())
        for p in sorted(folder.glob("ncu_source_*.csv"))
        if not p.stem.startswith("ncu_source_cuda_")
    )
    return NcuRun(str(folder), text("ncu_raw.csv"), text("ncu_details.csv"), sources)
