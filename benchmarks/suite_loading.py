"""How real suite checkouts load and score on the CPU, through the adapters' public functions only
(`diagnose.bench.suites.adapter(FORMAT).load` and `.score`).

    python benchmarks/suite_loading.py --tritonbench /work/corpus/tritonbench-full --kernelgen /work/corpus/kernelgenbench \
        [--kernelbench PATH] [--multikernelbench PATH] [--solutions tritonbench=FILE.jsonl] [--sample 20]

For each checkout given it prints: tasks listed, loaded (listed without a problem), unsupported by
reason (the listing problems, their file names left out), then a sample of `--sample` loaded tasks,
spread evenly over the listing, scored on the CPU (Triton's interpreter): passed, failed by failure
kind, adapter errors (an exception out of `score`), and the wall time of listing and of scoring.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

from diagnose.bench.suites import adapter
from diagnose.bench.sweep import SweepOptions

FORMATS = ("kernelbench", "multikernelbench", "tritonbench", "kernelgen")


def reason(problem: str) -> str:
    """A listing problem without the names in it, so that equal reasons count together."""
    text = problem.split("unsupported: ", 1)[-1]
    text = re.sub(r"^[\w./:-]+\.(py|json|jsonl): ", "", text)
    text = re.sub(r"^[\w/]+::\w+: ", "", text)
    text = re.sub(r"(in|under) /\S+", r"\1 <dir>", text)
    return text[:100]


def sample(tasks: list, n: int) -> list:
    step = max(1, len(tasks) // n) if n else 1
    return tasks[::step][:n]


def measure(
    fmt: str, root: Path, solutions: Path | None, n: int, timeout_s: float, seeds: int, verbose: bool = False
) -> dict:
    module = adapter(fmt)
    options = SweepOptions(suite_format=fmt, device="cpu", seeds=seeds, timeout_s=timeout_s, solutions=solutions)
    began = time.monotonic()
    tasks = module.load(root, options)
    listed_s = time.monotonic() - began
    loaded = [t for t in tasks if not t.problem]
    outcome: Counter = Counter()
    began = time.monotonic()
    for task in sample(loaded, n):
        try:
            rows = module.score(task, options)
        except Exception as exc:  # noqa: BLE001 - an adapter error is what this counts
            outcome[f"adapter error: {type(exc).__name__}"] += 1
            continue
        failures = [d.get("failure") for _, s, d in rows if s not in ("passed", "unavailable")]
        if verbose:
            said = next(
                (f.get("message", "") for f in failures if f),
                "; ".join(
                    r for _, s, d in rows if s == "failed" for r in d.get("reasons", []) + d.get("failed_checks", [])
                ),
            )
            print(f"  {task.entry.id}: {'passed' if not failures else 'failed'} {said[:160]}", flush=True)
        if not failures:
            outcome["passed"] += 1
        else:
            kinds = {(f or {}).get("kind", "verification") for f in failures}
            outcome["failed: " + ",".join(sorted(kinds))] += 1
    return {
        "tasks": len(tasks),
        "loaded": len(loaded),
        "unsupported": Counter(reason(t.problem) for t in tasks if t.problem),
        "sampled": sum(outcome.values()),
        "outcome": outcome,
        "list_s": listed_s,
        "score_s": time.monotonic() - began,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for fmt in FORMATS:
        parser.add_argument(f"--{fmt}", type=Path, help=f"a {fmt} checkout")
    parser.add_argument("--solutions", action="append", default=[], help="FORMAT=PATH: candidates for that format")
    parser.add_argument("--sample", type=int, default=20, help="loaded tasks scored on the CPU per checkout")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds each worker may run")
    parser.add_argument("--seeds", type=int, default=2, help="random input sets per input group")
    parser.add_argument("--verbose", action="store_true", help="one line per sampled task")
    args = parser.parse_args()
    solutions = dict(s.split("=", 1) for s in args.solutions)
    for fmt in FORMATS:
        root = getattr(args, fmt)
        if root is None:
            continue
        found = measure(
            fmt,
            root,
            Path(solutions[fmt]) if fmt in solutions else None,
            args.sample,
            args.timeout,
            args.seeds,
            args.verbose,
        )
        print(f"## {fmt}: {root}" + (f" (solutions {solutions[fmt]})" if fmt in solutions else ""))
        print(
            f"tasks {found['tasks']}, loaded {found['loaded']}, unsupported {sum(found['unsupported'].values())} "
            f"(listed in {found['list_s']:.1f} s)"
        )
        for why, count in found["unsupported"].most_common():
            print(f"  {count:4d}  {why}")
        print(f"scored on the CPU: {found['sampled']} of {found['loaded']} in {found['score_s']:.0f} s")
        for what, count in sorted(found["outcome"].items()):
            print(f"  {count:4d}  {what}")
        print(flush=True)


if __name__ == "__main__":
    main()
