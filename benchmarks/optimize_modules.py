"""Optimize the kernel modules of a real project as they are, several at a time on one device, and print
the table a kernel engineer reads: per module, the kernel timed, the initial and best medians, whether a
candidate verified, and the patch written.

    python benchmarks/optimize_modules.py --project PATH --launches PATH/.diagnose/launches \\
        --device cuda --jobs 3 --max-candidates 4 --max-wall 240 --out results.json MODULE.py ...

Each module runs `diagnose optimize` (the agent, `diagnose.agent.run.optimize`) on its captured launches;
the jobs share the device through one lock file, which keeps every timing loop alone on it (the same lock
`diagnose bench --jobs` uses). Patches are written beside the modules as `NAME.diagnose.patch` and never
applied. Nothing here is a test: it measures, and `--out` keeps the rows as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def best_timing(report) -> tuple[float | None, float | None, str | None]:
    """(initial ms, best ms, group) of the best candidate (`report`: a `diagnose.records.Report`), from its
    own timing run (the slowest group of the initial kernel, where the run had to gain most)."""
    from diagnose.report.scores import medians

    best = report.best_entry
    if best is not None:
        initial, mine = medians(best[1], "initial"), medians(best[1], "candidate")
        groups = [g for g in initial if g in mine]
        if groups:
            group = max(groups, key=lambda g: initial[g])
            return initial[group], mine[group], group
    baseline = medians(report.baseline, "candidate") if report.baseline is not None else {}
    if baseline:
        slowest = max(baseline, key=lambda g: baseline[g])
        return baseline[slowest], None, slowest
    return None, None, None


def run_one(module: Path, args, lock: str) -> dict:
    from diagnose.agent.run import optimize
    from diagnose.agent.state import Budget
    from diagnose.capture.prepare import task_path
    from diagnose.task import Inputs

    start = time.monotonic()
    row: dict = {
        "module": str(module.relative_to(args.project)) if module.is_relative_to(args.project) else str(module)
    }
    try:
        task = task_path(module, Inputs(launches=args.launches), device=args.device)
        result = optimize(
            task,
            target=args.target,
            device=args.device,
            device_lock=lock,
            budget=Budget(
                max_candidates=args.max_candidates, max_wall_s=args.max_wall, seeds=args.seeds, compile_baseline=False
            ),
        )
    except Exception as exc:  # noqa: BLE001 - one module's failure is its row
        row.update(error=f"{type(exc).__name__}: {exc}"[:300], seconds=round(time.monotonic() - start))
        return row
    report = result.report
    initial, best, group = best_timing(report)
    passed = [c for c, v in report.candidates if v.passed]
    patch_lines = 0
    if result.diff is not None and result.diff.exists():
        patch_lines = sum(
            1
            for line in result.diff.read_text().splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )
    row.update(
        run=result.run_id,
        group=group,
        initial_ms=initial,
        best_ms=best,
        speedup=round(initial / best, 3) if initial and best else None,
        proposed=len(report.candidates),
        verified=len(passed),
        best=report.best,
        rewrites=list(report.best_entry[0].made_by) if report.best_entry else [],
        patch=str(result.diff) if result.diff else None,
        patch_lines=patch_lines,
        seconds=round(time.monotonic() - start),
    )
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| module | group | initial ms | best ms | speedup | verified / proposed | rewrites | patch lines |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['module']} | error: {r['error']} | | | | | | |")
            continue
        fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else "-"  # noqa: E731
        lines.append(
            f"| {r['module']} | {r.get('group') or '-'} | {fmt(r['initial_ms'])} | {fmt(r['best_ms'])} | "
            f"{fmt(r['speedup'])} | {r['verified']} / {r['proposed']} | {', '.join(r['rewrites']) or '-'} | "
            f"{r['patch_lines']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="+", type=Path)
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--launches", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--target", default="cuda:sm90")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--max-candidates", type=int, default=4)
    parser.add_argument("--max-wall", type=float, default=240.0)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.project = args.project.resolve()
    lock = str(Path(args.launches).resolve().parent / "device.lock")
    done: list[dict] = []

    def one(module: Path) -> dict:
        row = run_one(module.resolve(), args, lock)
        done.append(row)
        print(table([row]).splitlines()[-1], flush=True)
        if args.out:  # kept as each module ends: a call cut short keeps what finished
            args.out.write_text(json.dumps(done, indent=1))
        return row

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, args.modules))
    print(table(rows))


if __name__ == "__main__":
    main()
