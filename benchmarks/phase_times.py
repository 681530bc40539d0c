"""Where `diagnose check` and `diagnose optimize` spend their wall time, per phase, on the examples.

    python benchmarks/phase_times.py [--device cpu|cuda] [--examples vector_add softmax ...] \
        [--candidates 4] [--no-optimize] [--jobs] [--out phases.md]

Runs each example through the command line as a user would (a fresh `python -m diagnose.cli` process,
its own cache folder, so nothing is reused between examples) and reads the phases back from what the
command wrote:

- `check EXAMPLE --seeds 2`: the harness's steps from the verdict (`reference`, `candidate`, `compare`,
  `ghost`; `other` is the rest of the verdict's total: the unseen-shape case, the re-check, timing), the
  process's whole wall time, and the two parts of it outside the verdict: `before` (until the first
  progress line: imports, loading the task) and `after` (the rest: cleaning up, the report). Below the
  table, each verdict's steps as it lists them.
- `optimize EXAMPLE --max-candidates N --seeds 2`: the run's wall time split by the escalation's steps
  (from its trace: each step's `at` minus the previous one's), and the candidates' harness phases summed.

With `--jobs`, each command's worker jobs as a timeline below the tables (from `DIAGNOSE_JOB_LOG`,
`diagnose/knobs.py`): when each job started and ended, in seconds from the command's start, its entry and
mode; the jobs that ran side by side show as overlapping intervals.

Prints two Markdown tables and, below them, each wall time against issue 25's targets: `check` of a small
example within 10 s on 2 CPU cores and within 20 s on the H200; `optimize` within 60 s per entry for 4
candidates on the H200. The targets are printed beside the numbers, never asserted: this is a benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("vector_add", "softmax", "layernorm", "matmul")
HARNESS = ("reference", "candidate", "compare", "ghost")
JOB_LOG = "jobs.jsonl"
TARGETS = {("check", "cpu"): 10.0, ("check", "cuda"): 20.0, ("optimize", "cuda"): 60.0}


def run(args: list[str], cache: Path) -> tuple[float, int, float | None]:
    """Wall seconds and exit code of one `diagnose` command in a fresh process and cache folder, and the
    seconds until its first progress line (`[check] reference: ...`): what the process spent before the
    verification began (imports, loading the task). Its worker jobs go to `cache/jobs.jsonl`."""
    env = dict(
        os.environ,
        DIAGNOSE_CACHE_DIR=str(cache),
        DIAGNOSE_JOB_LOG=str(cache / JOB_LOG),
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    )
    cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    first: float | None = None
    tail: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "diagnose.cli", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        for line in process.stderr:
            if first is None and line.startswith("["):
                first = time.perf_counter() - start
            tail = [*tail[-20:], line]
    wall = time.perf_counter() - start
    if process.returncode not in (0, 1):
        said = "".join(tail).strip()[-300:]
        print(f"  {' '.join(args[:2])}: exit {process.returncode}: {said}", file=sys.stderr)
    return wall, process.returncode, first


def harness_phases(phases: list) -> dict[str, float]:
    """The verdict's (step, seconds) pairs folded into the columns: the named steps, `other`, `total`."""
    seconds = defaultdict(float)
    for name, value in phases:
        key = "total" if name == "total" else next((h for h in HARNESS if name.startswith(h)), "other")
        seconds[key] += value
    seconds["other"] = max(0.0, seconds["total"] - sum(seconds[h] for h in HARNESS))
    return seconds


def check_row(example: str, device: str, work: Path, extra: tuple[str, ...] = ()) -> dict:
    out = work / f"check_{example}.json"
    cache, started = work / f"cache_check_{example}", time.time()
    wall, code, first = run(
        ["check", f"examples/{example}.py", "--device", device, "--seeds", "2", "--out", str(out), *extra], cache
    )
    row = {"example": example, "wall": wall, "exit": code, "before": first, "raw": [], "jobs": jobs(cache, started)}
    if out.exists():
        verdict = json.loads(out.read_text())["candidates"][0]["verdict"]
        row.update(harness_phases(verdict.get("phases") or []))
        row["raw"] = verdict.get("phases") or []
    return row


def step_seconds(trace: list[dict], started: float) -> dict[str, float]:
    """Seconds per kind of step of the escalation (`run source rules`, `propose rewrites`, `verify and time`,
    ...): each trace step's `at` minus the one before it, the process's start before the first."""
    seconds, last = {}, started
    for step in trace:
        at = step.get("at")
        if at is None:
            continue
        action = step["action"].split(":")[0]
        seconds[action] = seconds.get(action, 0.0) + max(0.0, at - last)
        last = at
    return seconds


def optimize_row(example: str, device: str, candidates: int, work: Path) -> dict:
    cache = work / f"cache_optimize_{example}"
    started = time.time()
    wall, code, _ = run(
        ["optimize", f"examples/{example}.py", "--device", device, "--seeds", "2", "--max-candidates", str(candidates)],
        cache,
    )
    row = {"example": example, "wall": wall, "exit": code, "jobs": jobs(cache, started)}
    reports = sorted(cache.rglob("report.json"))
    if reports:
        report = json.loads(reports[-1].read_text())
        row["steps"] = step_seconds(report.get("trace") or [], started)
        row["candidates"] = len(report.get("candidates") or [])
        summed = defaultdict(float)
        for entry in report.get("candidates") or []:
            for key, value in harness_phases((entry.get("verdict") or {}).get("phases") or []).items():
                summed[key] += value
        row["harness"] = summed
    return row


def jobs(cache: Path, started: float) -> list[dict]:
    """The command's worker jobs from its job log, each with `start` made seconds from `started`."""
    path = cache / JOB_LOG
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(({**job, "start": job["start"] - started} for job in lines), key=lambda job: job["start"])


def job_timeline(command: str, rows: list[dict]) -> list[str]:
    """Each row's jobs, one line each: start and end (seconds from the command's start), entry, mode."""
    lines = []
    for r in rows:
        lines += ["", f"Jobs of `{command} {r['example']}` (start-end s, seconds, entry, mode):", ""]
        lines += [
            f"- {j['start']:6.1f}-{j['start'] + j['seconds']:6.1f}  {j['seconds']:5.1f}  "
            f"{j['entry'].rpartition('.')[2]}"
            + (f" ({j['mode']})" if j.get("mode") else "")
            + ("" if j["ok"] else " FAILED")
            for j in r.get("jobs", [])
        ]
    return lines


def check_table(rows: list[dict], device: str) -> list[str]:
    target = TARGETS.get(("check", device))
    lines = [
        f"### `diagnose check --device {device} --seeds 2` (seconds)",
        "",
        "| example | before | " + " | ".join(HARNESS) + " | other | verdict total | after | process wall | target |",
        "|---|" + "---|" * (len(HARNESS) + 6),
    ]
    for r in rows:
        cells = [f"{r.get(h, 0.0):.1f}" for h in (*HARNESS, "other", "total")]
        before = r.get("before")
        after = r["wall"] - before - r.get("total", 0.0) if before is not None else None
        lines.append(
            f"| {r['example']} | {'-' if before is None else f'{before:.1f}'} | "
            + " | ".join(cells)
            + f" | {'-' if after is None else f'{after:.1f}'} | {r['wall']:.1f} | "
            + (f"{'within' if r['wall'] <= target else 'over'} {target:.0f} s" if target else "-")
            + " |"
        )
    lines += ["", "The verdicts' steps as they list them:", ""]
    lines += [f"- {r['example']}: " + ", ".join(f"{name} {value:g}" for name, value in r["raw"]) for r in rows]
    return lines


def optimize_table(rows: list[dict], device: str, candidates: int) -> list[str]:
    target = TARGETS.get(("optimize", device))
    steps = list(dict.fromkeys(step for r in rows for step in r.get("steps", {})))
    lines = [
        f"### `diagnose optimize --device {device} --max-candidates {candidates} --seeds 2` (seconds)",
        "",
        "| example | " + " | ".join(steps) + " | candidates | their harness total | process wall | target |",
        "|---|" + "---|" * (len(steps) + 4),
    ]
    for r in rows:
        cells = [f"{r.get('steps', {}).get(step, 0.0):.1f}" for step in steps]
        lines.append(
            f"| {r['example']} | " + " | ".join(cells) + f" | {r.get('candidates', '-')} | "
            f"{r.get('harness', {}).get('total', 0.0):.1f} | {r['wall']:.1f} | "
            + (f"{'within' if r['wall'] <= target else 'over'} {target:.0f} s" if target else "-")
            + " |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--examples", nargs="+", default=list(EXAMPLES))
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--no-optimize", action="store_true")
    parser.add_argument("--jobs", action="store_true", help="each command's worker jobs as a timeline")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--check-option", action="append", default=[], help="one more option of check, e.g. --check-option=--no-compile"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="phase_times_") as tmp:
        work = Path(tmp)
        checks = [check_row(e, args.device, work, tuple(args.check_option)) for e in args.examples]
        lines = check_table(checks, args.device) + (job_timeline("check", checks) if args.jobs else [])
        # The check table is out before optimize starts: a run cut by an outer time limit keeps it.
        show("\n".join(lines) + "\n", args.out)
        if not args.no_optimize:
            optimized = [optimize_row(e, args.device, args.candidates, work) for e in args.examples]
            optimize_lines = optimize_table(optimized, args.device, args.candidates)
            optimize_lines += job_timeline("optimize", optimized) if args.jobs else []
            show("\n".join(optimize_lines) + "\n", args.out, append=True)


def show(text: str, out: Path | None, append: bool = False) -> None:
    """Print `text`, and write it to `out` (after what is there, with `append`)."""
    print(text, flush=True)
    if out:
        with out.open("a" if append else "w") as handle:
            handle.write(("\n" if append else "") + text)


if __name__ == "__main__":
    main()
