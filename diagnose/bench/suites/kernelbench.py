"""KernelBench (ScalingIntelligence/KernelBench): level folders of problem files, scored against a
folder of solutions.

Layout, as in a KernelBench checkout (`KernelBench/level1/19_ReLU.py`, ...)::

    SUITE/level1/19_ReLU.py        class Model, get_inputs(), get_init_inputs()  (the problem)
    SOLUTIONS/level1/19_ReLU.py    class ModelNew                                (the candidate)

`diagnose bench kernelbench SUITE --solutions SOLUTIONS` scores every problem with a solution matched
to it by name (same relative path, same stem, or KernelBench's own run naming
`level_1_problem_19_sample_0_kernel.py`; see `diagnose/bench/suites/base.py`). The problem file is
the reference and the solution the candidate (two-file task): inputs and reference outputs always
come from the problem, so a solution cannot change what it is checked on. The same harness as every
other suite checks it (several seeds, anti-cheat, ghost replay) and, on a device, times it beside
PyTorch eager and `torch.compile`.

`--tolerance kernelbench` scores with KernelBench's own tolerance (`atol = rtol = 1e-2`, as its
`eval.py`); the default is diagnose's per-dtype table. `summary(rows)` gives KernelBench's metrics:
correctness and fast_p for p = 0, 1, 1.5, 2 over eager and over `torch.compile` (fast_p = the share of
*all* problems that are correct and faster than p times the baseline; fast_0 = correctness rate; on a
machine with no device nothing is timed and fast_p for p > 0 is unknown, not zero).

A problem without a solution, or a file missing `Model`/`get_inputs`/`get_init_inputs` (or a
solution missing `ModelNew`), is a failed row with a one-line reason; the sweep goes on.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.bench.suites.base import (Row, SuiteTask, failed, keep, make_entry, match_solution, python_problem,
                                        verify_rows, with_tokens)
from diagnose.errors import UsageError

MODES = ("score",)
FAST_P = (0.0, 1.0, 1.5, 2.0)
PROBLEM_NAMES = ("Model", "get_inputs", "get_init_inputs")


def problem_files(root: Path, solutions: Path | None) -> list[Path]:
    inside = solutions.resolve() if solutions else None
    return [p for p in sorted(root.rglob("*.py"))
            if not p.name.startswith("_") and not (inside and p.resolve().is_relative_to(inside))]


def load(root: Path, options) -> list[SuiteTask]:
    if options.solutions is None:
        raise UsageError("kernelbench needs --solutions DIR: a folder of ModelNew files named after the problems")
    solutions = Path(options.solutions)
    if not solutions.is_dir():
        raise UsageError(f"{solutions}: not a folder of solutions")
    tasks = []
    for path in problem_files(root, solutions):
        solution = match_solution(root, path, solutions)
        files = [path] + ([solution] if solution else [])
        problem = python_problem(path, PROBLEM_NAMES, "problem")
        if problem is None and solution is None:
            problem = f"{path.name}: no solution for it in {solutions}"
        if problem is None:
            problem = python_problem(solution, ("ModelNew",), "solution")
        tasks.append(SuiteTask(make_entry(root, path, files), tuple(files), solution, problem))
    return keep(tasks, options.pattern)


def score(task: SuiteTask, options) -> list[Row]:
    if task.problem:
        return failed("load_error", task.problem)
    return with_tokens(verify_rows(task.entry.path, task.solution, options), task.solution)


def fast_p(rows: list, baseline: str) -> dict[str, float | None]:
    """KernelBench's fast_p over `rows` (store rows): p = 0 is the correctness rate."""
    total = len(rows)
    correct = [r for r in rows if r.status == "passed"]
    speedups = [r.data.get(f"speedup_vs_{baseline}") for r in correct]
    timed = [s for s in speedups if s is not None]
    out: dict[str, float | None] = {}
    for p in FAST_P:
        if p == 0.0:
            out[str(p)] = len(correct) / total if total else None
        else:
            out[str(p)] = sum(s > p for s in timed) / total if timed and total else None
    return out


def summary(rows: list) -> dict:
    """Correctness and fast_p over eager and torch.compile for one KernelBench sweep's rows."""
    return {
        "problems": len({r.entry for r in rows}),
        "correct": sum(r.status == "passed" for r in rows),
        "rows": len(rows),
        "fast_p": {b: fast_p(rows, b) for b in ("eager", "compile")},
    }


def render_summary(data: dict) -> str:
    def cell(v):
        return "-" if v is None else f"{v:.3g}"

    lines = [f"KernelBench: {data['correct']}/{data['rows']} correct over {data['problems']} problems",
             f"{'over':8}" + "".join(f"{'fast_' + format(p, 'g'):>10}" for p in FAST_P)]
    for baseline, values in data["fast_p"].items():
        lines.append(f"{baseline:8}" + "".join(f"{cell(values[str(p)]):>10}" for p in FAST_P))
    return "\n".join(lines)
