"""`diagnose decompose` with Inductor candidates over KernelBench level 2 on the CPU interpreter.

    PYTHONPATH=. .venv/bin/python benchmarks/decompose_inductor.py CORPUS/KernelBench/level2 --first 30 --out OUT \
        --timeout 120

Each problem (in numeric order) is copied with its sizes shrunk so the Triton interpreter can verify
its kernels in seconds: `batch_size` 2, spatial sizes (height, width, depth, H, W, D) at most 16 (8
for depth), feature sizes (in_features, out_features, input_size, hidden_size) at most 512; channels
and everything else as written. Then `decompose(..., prefer="triton")` runs on the copy; one JSON line
per problem goes to OUT/results.jsonl (each subgraph's candidates, statuses and notes), and a summary
(subgraphs, inductor candidates made and passed, the most frequent reasons) is printed.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import time
from collections import Counter
from pathlib import Path

from diagnose.decompose.command import decompose
from diagnose.errors import DiagnoseError
from diagnose.verify.harness import CheckOptions

LIMITS = {"batch_size": 2, "height": 16, "width": 16, "depth": 8, "H": 16, "W": 16, "D": 8,
          "in_features": 512, "out_features": 512, "input_size": 512, "hidden_size": 512}


def shrunk(text: str) -> str:
    """The problem with its top-level sizes capped: `get_inputs` and `get_init_inputs` read them when
    called, so lines appended at the end (`height = min(height, 16)`) cap what they use."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    caps = "".join(f"{n} = min({n}, {limit}) if isinstance({n}, int) else {n}\n"
                   for n, limit in LIMITS.items() if n in names)
    return text + "\n\n# Sizes capped for the Triton interpreter (benchmarks/decompose_inductor.py).\n" + caps


def number(path: Path) -> int:
    return int(path.name.split("_")[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("level2", type=Path)
    parser.add_argument("--first", type=int, default=30)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per worker")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    options = CheckOptions(device="cpu", seeds=(0, 1), baselines=("eager",), unseen_shapes=False,
                           timeout_s=args.timeout)
    results = args.out / "results.jsonl"
    done = {json.loads(line)["problem"] for line in results.read_text().splitlines()} if results.exists() else set()
    for problem in sorted(args.level2.glob("*.py"), key=number)[:args.first]:
        if problem.name in done:
            continue
        copy = args.out / "models" / problem.name
        copy.parent.mkdir(exist_ok=True)
        copy.write_text(shrunk(problem.read_text()))
        start = time.monotonic()
        try:
            report = decompose(copy, None, options, args.out / "runs" / problem.stem, "triton")
            row = {"problem": problem.name, "end_to_end": report.end_to_end.passed,
                   "subgraphs": [{"name": sg.name, "ops": sg.ops, "chosen": sg.choice.name,
                                  "candidates": [[c.name, c.status, c.note] for c in sg.candidates]}
                                 for sg in report.subgraphs]}
        except DiagnoseError as exc:
            row = {"problem": problem.name, "error": str(exc)[:300]}
        row["wall_s"] = round(time.monotonic() - start, 1)
        with results.open("a") as out:
            out.write(json.dumps(row) + "\n")
        print(problem.name, row.get("error") or [(s["name"], s["chosen"]) for s in row["subgraphs"]], flush=True)
    summary(results)


def summary(results: Path) -> None:
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    subgraphs = [sg for r in rows for sg in r.get("subgraphs", [])]
    inductor = [next(c for c in sg["candidates"] if c[0] == "inductor") for sg in subgraphs]
    made = [c for c in inductor if c[1] != "unavailable"]
    reasons = Counter(re.sub(r"\d+", "N", c[2])[:120] for c in inductor if c[1] == "unavailable")
    failures = Counter(re.sub(r"\d+", "N", c[2])[:120] for c in inductor if c[1] == "failed")
    print(f"problems {len(rows)} (errors {sum('error' in r for r in rows)}), subgraphs {len(subgraphs)}, "
          f"inductor candidates {len(made)}, passed {sum(c[1] == 'passed' for c in made)}, "
          f"failed {sum(c[1] == 'failed' for c in made)}; end to end passed "
          f"{sum(r.get('end_to_end') is True for r in rows)}, failed {sum(r.get('end_to_end') is False for r in rows)}")
    print("not made:", *(f"  {n} x {why}" for why, n in reasons.most_common(8)), sep="\n")
    print("failed:", *(f"  {n} x {why}" for why, n in failures.most_common(8)), sep="\n")


if __name__ == "__main__":
    main()
