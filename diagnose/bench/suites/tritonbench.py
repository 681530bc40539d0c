"""TritonBench-G / TritonBench-T (thunlp/TritonBench): a kernel file whose code (Triton kernels and
their Python wrappers) and a test part are separated by a long line of `#`::

    @triton.jit
    def add_kernel(...): ...
    def add(x, y): ...
    ##################################################################################################
    def test_add():
        results = {}
        results["test_case_1"] = add(torch.randn(16, device=DEVICE), torch.randn(16, device=DEVICE))
        return results
    result_gold = test_add()

A separator is a line of at least 20 `#` and nothing else (TritonBench's are 146). Scoring runs the
*original file's* test part twice in fresh worker subprocesses (never in this process): once with the
original code above it, once with the candidate's code (`--solutions DIR/<name>.py`, matched by name;
its own test part, if any, is ignored). Without `--solutions` the original is scored against itself,
which checks that the file runs and that its test is deterministic. Each top-level `test_*` function
is an input group, called once per seed after `torch.manual_seed(seed)`; what it returns (a dict of
tensors, tensors, numbers, strings, or nothing, in which case what it printed) is compared with the
original's under the harness's per-dtype tolerances. Top-level calls in the test part
(`result_gold = test_add()`) are dropped so that each test runs only when called. The candidate must
launch at least one Triton kernel. On a device each test is called again (after a warm-up call that
compiles) with device events around every Triton launch it makes: its time is the median over 20
calls of the summed kernel time (input creation and Python around the launches are not counted), and
the speedup is the original's time over the candidate's (TritonBench's Σms_ref / Σms_gen per test).

A file without a separator or without a `test_*` function, or a candidate that does not parse, is a
failed row with a one-line reason; the sweep goes on.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import tempfile
from pathlib import Path

from diagnose import syntax
from diagnose.bench.suites import tolerance
from diagnose.bench.suites.base import Row, SuiteTask, failed, keep, make_entry, match_solution, with_tokens

MODES = ("score",)
SEPARATOR = re.compile(r"^#{20,}\s*$", re.MULTILINE)
ENTRY = "diagnose.bench.suites.tritonbench:run_tests"
TIMING_REPS = 20


def split(source: str, name: str) -> tuple[str, str]:
    """(code part, test part) of a TritonBench file; ValueError when there is no separator."""
    found = SEPARATOR.search(source)
    if not found:
        raise ValueError(f"{name}: no separator line of `#` between the code and its test")
    return source[:found.start()], source[found.end():]


def parsed(source: str, name: str) -> ast.Module:
    try:
        return syntax.parse(source, filename=name)
    except SyntaxError as exc:
        raise ValueError(f"{name}:{exc.lineno}: syntax error: {exc.msg}") from None


def test_names(test_part: str, name: str) -> list[str]:
    tree = parsed(test_part, name)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
             and len(n.args.args) == len(n.args.defaults)]
    if not names:
        raise ValueError(f"{name}: the test part has no test_* function without arguments")
    return names


def without_calls(test_part: str, name: str) -> str:
    """The test part with its top-level statements that call a test function removed."""
    tree = parsed(test_part, name)
    tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")}
    drop = set()
    for node in tree.body:
        if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) and node.value is not None:
            calls = [c for c in ast.walk(node.value) if isinstance(c, ast.Call)]
            if any(isinstance(c.func, ast.Name) and c.func.id in tests for c in calls):
                drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return "\n".join(line for i, line in enumerate(test_part.splitlines(), 1) if i not in drop) + "\n"


def code_part(source: str) -> str:
    found = SEPARATOR.search(source)
    return source[:found.start()] if found else source


def load(root: Path, options) -> list[SuiteTask]:
    solutions = Path(options.solutions) if options.solutions else None
    tasks = []
    for path in sorted(root.rglob("*.py")):
        if path.name.startswith("_") or (solutions and path.resolve().is_relative_to(solutions.resolve())):
            continue
        solution = match_solution(root, path, solutions) if solutions else path
        files = [path] + ([solution] if solution and solution != path else [])
        problem = None
        try:
            code, test = split(path.read_text(encoding="utf-8"), path.name)
            parsed(code, path.name)
            test_names(test, path.name)
            if solution is None:
                problem = f"{path.name}: no solution for it in {solutions}"
            elif solution != path:
                parsed(code_part(solution.read_text(encoding="utf-8")), solution.name)
        except (ValueError, UnicodeDecodeError) as exc:
            problem = str(exc)
        tasks.append(SuiteTask(make_entry(root, path, files), tuple(files), solution, problem))
    return keep(tasks, options.pattern)


def run_tests(payload: dict) -> dict:
    """Worker side: import the combined file, call each test per seed, save what they returned."""
    import sys

    import torch

    from diagnose.task import import_task_file
    from diagnose.verify import instrument, tensors

    sys.path.insert(0, payload["folder"])
    module = import_task_file(payload["path"])
    log = instrument.LaunchLog()
    kernels = instrument.user_kernels()
    instrument.count_launches(kernels, log)
    cases, times = [], {}
    for name in payload["tests"]:
        test = getattr(module, name)
        for seed in payload["seeds"]:
            torch.manual_seed(seed)
            printed = io.StringIO()
            before = log.total()
            with contextlib.redirect_stdout(printed):
                value = test()
            value = printed.getvalue() if value is None else value
            path = Path(payload["job_dir"], f"{payload['side']}_{name}_{seed}.pt")
            cases.append({"group": name, "seed": seed, "launches": log.total() - before,
                          "outputs": tensors.save(flat(value), path)})
        if payload["timed"]:
            with contextlib.redirect_stdout(io.StringIO()):
                times[name] = kernel_ms(test, kernels, payload["device"])
    return {"cases": cases, "times_ms": times}


def kernel_ms(test, kernels: list, device: str, reps: int = TIMING_REPS) -> float:
    """Median over `reps` calls of `test` of the summed device time of its Triton launches (worker side)."""
    import statistics

    import torch

    backend = getattr(torch, device)
    spans: list = []
    for kernel in kernels:
        def timed_run(*args, _original=kernel.run, **kwargs):
            start, end = backend.Event(enable_timing=True), backend.Event(enable_timing=True)
            start.record()
            out = _original(*args, **kwargs)
            end.record()
            spans.append((start, end))
            return out

        kernel.run = timed_run
    test()  # warm-up: compiles (and autotunes) outside the measurement
    backend.synchronize()
    totals = []
    for _ in range(reps):
        spans.clear()
        test()
        backend.synchronize()
        totals.append(sum(start.elapsed_time(end) for start, end in spans))
    return statistics.median(totals)


def flat(value, prefix: str = "") -> dict:
    """A test's result as {key: tensor or text}, keys in a stable order."""
    import torch

    def below(key) -> str:
        return f"{prefix}/{key}" if prefix else str(key)

    if isinstance(value, dict):
        return {k: v for key in sorted(value, key=str) for k, v in flat(value[key], below(key)).items()}
    if isinstance(value, (list, tuple)):
        return {k: v for i, item in enumerate(value) for k, v in flat(item, below(i)).items()}
    if isinstance(value, torch.Tensor):
        return {prefix or "value": value.detach().cpu()}
    if isinstance(value, (bool, int, float)):
        return {prefix or "value": torch.tensor(value)}
    return {prefix or "value": str(value)}


def compare(original: dict, candidate: dict, overrides: dict) -> tuple[bool, float, str | None]:
    """(correct, max abs error, reason) of a candidate's test result against the original's, under the
    tolerance profile's `overrides` of the default table."""
    from diagnose.verify.compare import compare_one

    if list(original) != list(candidate):
        return False, 0.0, f"result keys {sorted(candidate)} != original {sorted(original)}"
    worst = 0.0
    for key, ref in original.items():
        out = candidate[key]
        if isinstance(ref, str) or isinstance(out, str):
            if ref != out:
                return False, worst, f"{key}: output differs from the original's"
            continue
        ok, max_abs, _, reason = compare_one(ref, out, overrides)
        if not ok:
            return False, max_abs, f"{key}: {reason}"
        worst = max(worst, max_abs)
    return True, worst, None


def score(task: SuiteTask, options) -> list[Row]:
    from diagnose.runtime import call
    from diagnose.runtime.devices import interpreted, timed
    from diagnose.toolchain.placement import require
    from diagnose.verify import tensors

    if task.problem:
        return failed("load_error", task.problem)
    where = require(options.device)
    runner = where.runner_options() if hasattr(where, "runner_options") else {"interpret": interpreted(options.device)}
    original = task.entry.path
    code, test = split(original.read_text(encoding="utf-8"), original.name)
    tests = test_names(test, original.name)
    test = without_calls(test, original.name)
    sides = {"original": code, "candidate": code_part(task.solution.read_text(encoding="utf-8"))}
    with tempfile.TemporaryDirectory(prefix="diagnose-tritonbench-") as job:
        results = {}
        for side, part in sides.items():
            path = Path(job, side, original.name)
            path.parent.mkdir()
            path.write_text(part + "\n\n" + test)
            payload = {"path": str(path), "folder": str(original.resolve().parent), "tests": tests, "side": side,
                       "seeds": list(range(options.seeds)), "job_dir": job, "timed": timed(options.device),
                       "device": options.device}
            result = call(ENTRY, payload, timeout_s=options.timeout_s, **runner)
            if not result.ok:
                if side == "original":
                    return failed("load_error", f"{original.name}: the original's test failed: {result.failure.message}")
                return [("*", "failed", {"failure": result.failure.to_dict(), "failed_checks": []})]
            results[side] = result.value
        rows = []
        for name in tests:
            pairs = [(o, c) for o, c in zip(results["original"]["cases"], results["candidate"]["cases"])
                     if o["group"] == name]
            overrides = dict(tolerance.overrides(options.tolerance))
            verdicts = [compare(tensors.load(o["outputs"]), tensors.load(c["outputs"]), overrides) for o, c in pairs]
            correct = all(v[0] for v in verdicts)
            silent = [f"seed {c['seed']}" for _, c in pairs if c["launches"] < 1]
            checks = [f"launches_triton: no Triton kernel launched ({', '.join(silent)})"] if silent else []
            ref_ms = results["original"]["times_ms"].get(name)
            cand_ms = results["candidate"]["times_ms"].get(name)
            rows.append((name, "passed" if correct and not checks else "failed", {
                "correct": correct,
                "max_abs_err": max(v[1] for v in verdicts),
                "reasons": sorted({v[2] for v in verdicts if not v[0]}),
                "failed_checks": checks,
                "medians_ms": {"candidate": cand_ms, "initial": ref_ms},
                "timed": cand_ms is not None,
                "stable": True,
                "speedup_vs_eager": None,
                "speedup_vs_compile": None,
                "speedup_vs_original": ref_ms / cand_ms if ref_ms and cand_ms else None,
                "candidate_is_original": task.solution == original,
            }))
    return with_tokens(rows, task.solution if task.solution != original else None)
