"""`diagnose decompose` with Inductor candidates over KernelBench level 2, on the CPU interpreter or a GPU.

    PYTHONPATH=. .venv/bin/python benchmarks/decompose_kernelbench.py CORPUS/KernelBench/level2 --first 30 --out OUT \
        --timeout 120
    PYTHONPATH=. .venv/bin/python benchmarks/decompose_kernelbench.py CORPUS/KernelBench/level2 --first 100 --out OUT \
        --device cuda --jobs 4 --timeout 600 --start-within 1500 --markdown OUT/summary.md
    PYTHONPATH=. .venv/bin/python benchmarks/decompose_kernelbench.py CORPUS/KernelBench/level2 --out OUT --summary-only

Problems run in numeric order (`--only a,b` keeps file names containing any of the words, then `--first N`).
On `--device cpu` each is copied with its sizes shrunk so the Triton interpreter can verify its kernels in
seconds: `batch_size` 2, spatial sizes (height, width, depth, H, W, D) at most 16 (8 for depth), feature sizes
(in_features, out_features, input_size, hidden_size) at most 512; channels and everything else as written; then
`decompose(..., prefer="triton")` with 2 seeds against eager (nothing is timed). On `--device cuda` the problems
run as written, 2 seeds, timed against eager and `torch.compile`; each subgraph gets the fastest verified
candidate (`prefer="torch"` only breaks what timing leaves open) and the composite is timed end to end.

Each problem's processes get `OMP_NUM_THREADS` = cores / `--jobs` (unless it is set): the host work of
GiB-sized outputs (drawing, comparing) in `--jobs` problems at once would otherwise oversubscribe the cores.
`--problem-limit S` kills a problem still running after S seconds (its row says so), so that
rows land before an outer time limit. `--jobs N` runs N problems at once, each in a process of its own; they share the GPU through a lock file under
OUT (`diagnose/runtime/device_lock.py`: a timing loop holds the device alone). `--start-within S`: no problem
starts after S seconds from the sweep's start, so an outer time limit cuts none mid-way. One JSON line per
problem goes to OUT/results.jsonl as it finishes (problems already there are skipped: a sweep resumes):
`end_to_end` (True, False, None when every subgraph chose torch), `e2e_speedups` ({"eager": x, "compile": y}
when timed: geometric means over input groups), each subgraph's candidates as [name, status, time_ms, note]
and the chosen one, the fused pairs tried as [name, ms as two, ms fused, taken], `wall_s`; or `error`.

The summary (printed, and with `--markdown FILE` written as a Markdown table): problems; correct (end to end
passed, or an all-torch composite, which is the model itself); fast_1 over eager and over torch.compile: the
fraction of all problems swept whose composite passed and is faster than that baseline (an all-torch composite
is not timed and not fast); the distribution of the passed composites' speedups; subgraphs by chosen
implementation; inductor candidates made, passed and failed, with the most frequent reasons.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from diagnose.scoring import geomean

LIMITS = {
    "batch_size": 2,
    "height": 16,
    "width": 16,
    "depth": 8,
    "H": 16,
    "W": 16,
    "D": 8,
    "in_features": 512,
    "out_features": 512,
    "input_size": 512,
    "hidden_size": 512,
}
BASELINES = {"eager": "eager", "compile": "torch.compile"}


def shrunk(text: str) -> str:
    """The problem with its top-level sizes capped: `get_inputs` and `get_init_inputs` read them when
    called, so lines appended at the end (`height = min(height, 16)`) cap what they use."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    caps = "".join(
        f"{n} = min({n}, {limit}) if isinstance({n}, int) else {n}\n" for n, limit in LIMITS.items() if n in names
    )
    return text + "\n\n# Sizes capped for the Triton interpreter (benchmarks/decompose_kernelbench.py).\n" + caps


def number(path: Path) -> int:
    return int(path.name.split("_")[0])


def run_one(problem: Path, out: Path, device: str, timeout: float, fuse_budget: int = 4) -> dict:
    """Decompose one problem (in a process of its own) and return its row."""
    from diagnose.decompose.command import decompose
    from diagnose.errors import DiagnoseError
    from diagnose.verify.harness import CheckOptions

    start = time.monotonic()
    if device == "cpu":
        options = CheckOptions(device="cpu", seeds=(0, 1), baselines=("eager",), unseen_shapes=False, timeout_s=timeout)
        model = out / "models" / problem.name
        model.parent.mkdir(exist_ok=True)
        model.write_text(shrunk(problem.read_text()))
    else:
        options = CheckOptions(
            device=device,
            seeds=(0, 1),
            baselines=("eager", "compile"),
            unseen_shapes=False,
            timeout_s=timeout,
            device_lock=str((out / "device.lock").resolve()),
            # each step named in the log as it starts: a problem killed mid-way leaves a trace
            on_phase=lambda phase: print(
                f"{problem.stem}: {time.monotonic() - start:.0f} s: {phase}", file=sys.stderr, flush=True
            ),
        )
        model = problem
    try:
        report = decompose(
            model,
            None,
            options,
            out / "runs" / problem.stem,
            "triton" if device == "cpu" else "torch",
            fuse_budget=fuse_budget,
        )
        row = {
            "problem": problem.name,
            "end_to_end": report.end_to_end.passed,
            "e2e_detail": report.end_to_end.detail[:300],
            "e2e_speedups": dict(report.end_to_end.speedups),
            "subgraphs": [
                {
                    "name": sg.name,
                    "ops": sg.ops,
                    "chosen": sg.choice.name,
                    "candidates": [[c.name, c.status, c.time_ms, c.note] for c in sg.candidates],
                }
                for sg in report.subgraphs
            ],
            "fusions": [[f.name, f.before_ms, f.after_ms, f.taken] for f in report.fusions],
            "splits": [[c.name, c.tail_choice, c.taken] for c in report.splits],
        }
    except DiagnoseError as exc:
        row = {"problem": problem.name, "error": str(exc)[:300]}
    except Exception as exc:  # a bug of ours on one problem is its row: the sweep goes on
        row = {"problem": problem.name, "error": f"{type(exc).__name__}: {exc}"[:300]}
    row["wall_s"] = round(time.monotonic() - start, 1)
    return row


def launch(problem: Path, args: argparse.Namespace) -> subprocess.Popen:
    # A session of its own: a problem over --problem-limit is killed with every worker it started.
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            str(args.level2),
            "--out",
            str(args.out),
            "--one",
            problem.name,
            "--device",
            args.device,
            "--timeout",
            str(args.timeout),
            "--fuse-budget",
            str(args.fuse_budget),
        ],
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS") or str(threads(args.jobs))},
    )


def threads(jobs: int) -> int:
    """Host threads per problem: the cores shared among the problems running at once (torch's pools in
    every process of every problem, each sized for the whole machine, oversubscribe it `jobs` times)."""
    return max(1, (os.cpu_count() or 1) // jobs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("level2", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--first", type=int, default=30)
    parser.add_argument("--only", default="", help="comma-separated words; keep problems whose file name has one")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per worker")
    parser.add_argument("--jobs", type=int, default=1, help="problems at once")
    parser.add_argument("--fuse-budget", type=int, default=4, help="fused pairs tried per problem (timed only)")
    parser.add_argument("--start-within", type=float, default=None, help="start no problem after S seconds")
    parser.add_argument(
        "--problem-limit",
        type=float,
        default=None,
        help="seconds a problem may take; past it, it is killed and its row says so",
    )
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the summary here as a table")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child: one problem, row to OUT/rows/
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    if args.one is not None:
        row = run_one(args.level2 / args.one, args.out, args.device, args.timeout, args.fuse_budget)
        (args.out / "rows").mkdir(exist_ok=True)
        (args.out / "rows" / f"{args.one}.json").write_text(json.dumps(row))
        return
    if not args.summary_only:
        sweep(args, results)
    summary(results, args.markdown)


def sweep(args: argparse.Namespace, results: Path) -> None:
    """Run the problems not in `results` yet, `--jobs` at a time; append each row as it finishes."""
    words = [w for w in args.only.split(",") if w]
    problems = [p for p in sorted(args.level2.glob("*.py"), key=number) if not words or any(w in p.name for w in words)]
    done = {json.loads(line)["problem"] for line in results.read_text().splitlines()} if results.exists() else set()
    waiting = [p for p in problems[: args.first] if p.name not in done]
    start, running, killed = time.monotonic(), {}, set()
    while waiting or running:
        late = args.start_within is not None and time.monotonic() - start > args.start_within
        while waiting and len(running) < args.jobs and not late:
            problem = waiting.pop(0)
            (args.out / "rows" / f"{problem.name}.json").unlink(missing_ok=True)
            running[launch(problem, args)] = (problem, time.monotonic())
        if late and not running:
            print(f"--start-within {args.start_within:g} s passed: {len(waiting)} problems not started", flush=True)
            break
        time.sleep(0.5)
        for child, (problem, began) in list(running.items()):
            if (
                args.problem_limit is not None
                and child.poll() is None
                and time.monotonic() - began > args.problem_limit
            ):
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                killed.add(child)
        for child in [c for c in running if c.poll() is not None]:
            problem, began = running.pop(child)
            written = args.out / "rows" / f"{problem.name}.json"
            # A child that died (memory, a signal) wrote nothing: its row says so and the sweep goes on.
            why = (
                f"over --problem-limit {args.problem_limit:g} s"
                if child in killed
                else f"worker exited {child.returncode} with no row"
            )
            row = (
                json.loads(written.read_text())
                if written.exists()
                else {"problem": problem.name, "error": why, "wall_s": round(time.monotonic() - began, 1)}
            )
            with results.open("a") as out:
                out.write(json.dumps(row) + "\n")
            print(
                problem.name,
                row.get("error") or [(s["name"], s["chosen"]) for s in row["subgraphs"]],
                row.get("e2e_speedups") or "",
                flush=True,
            )


def spread(values: list[float]) -> str:
    """min, quartiles, max and geometric mean of some speedups."""
    if not values:
        return "none timed"
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return (
        f"n {len(values)}: min {min(values):.2f}x, q1 {q1:.2f}x, median {median:.2f}x, q3 {q3:.2f}x, "
        f"max {max(values):.2f}x, geomean {geomean(values):.2f}x"
    )


def summary(results: Path, markdown: Path | None = None) -> list[tuple[str, str]]:
    """Print the sweep's figures (and write them to `markdown` as a table); return them as (measure, value)."""
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()] if results.exists() else []
    n = len(rows) or 1
    subgraphs = [sg for r in rows for sg in r.get("subgraphs", [])]
    inductor = [c for sg in subgraphs for c in sg["candidates"] if c[0] == "inductor"]
    made = [c for c in inductor if c[1] != "unavailable"]
    # An all-torch composite (end_to_end None) is the model itself: correct, but neither timed nor fast.
    correct = [r for r in rows if "error" not in r and r.get("end_to_end") is not False]
    passed = [r for r in rows if r.get("end_to_end") is True]
    failed = sum(r.get("end_to_end") is False for r in rows)
    out = [
        ("problems", f"{len(rows)} (errors {sum('error' in r for r in rows)})"),
        (
            "correct",
            f"{len(correct)}/{len(rows)} ({len(correct) / n:.0%}): end to end passed {len(passed)}, "
            f"all torch {len(correct) - len(passed)}, failed {failed}",
        ),
    ]
    for base, name in BASELINES.items():
        fast = sum(r.get("e2e_speedups", {}).get(base, 0) > 1 for r in passed)
        out.append((f"fast_1 over {name}", f"{fast}/{len(rows)} ({fast / n:.0%})"))
    for base, name in BASELINES.items():
        out.append(
            (
                f"speedup over {name}",
                spread([r["e2e_speedups"][base] for r in passed if base in r.get("e2e_speedups", {})]),
            )
        )
    chosen = Counter(sg["chosen"] for sg in subgraphs)
    out += [
        ("subgraphs", f"{len(subgraphs)}; chosen: " + ", ".join(f"{k} {v}" for k, v in chosen.most_common())),
        (
            "fusions",
            f"{sum(len(r.get('fusions', [])) for r in rows)} pairs tried, "
            f"{sum(f[3] for r in rows for f in r.get('fusions', []))} taken",
        ),
        (
            "splits",
            f"{sum(len(r.get('splits', [])) for r in rows)} subgraphs cut after their anchor, "
            f"{sum(c[2] for r in rows for c in r.get('splits', []))} kept",
        ),
        (
            "inductor candidates",
            f"{len(made)} made, {sum(c[1] == 'passed' for c in made)} passed, "
            f"{sum(c[1] == 'failed' for c in made)} failed",
        ),
    ]
    for status, label in (("unavailable", "not made"), ("failed", "failed")):
        # The note is the last field (rows written before time_ms was recorded have three).
        reasons = Counter(re.sub(r"\d+", "N", c[-1])[:120] for c in inductor if c[1] == status)
        out += [(f"inductor {label}", f"{count} x {why}") for why, count in reasons.most_common(8)]
    print(*(f"{measure}: {value}" for measure, value in out), sep="\n")
    if markdown is not None:
        cells = [(m, v.replace("|", "\\|")) for m, v in out]
        table = ["| measure | value |", "|---|---|", *(f"| {m} | {v} |" for m, v in cells)]
        markdown.write_text("\n".join(table) + "\n")
    return out


if __name__ == "__main__":
    main()
