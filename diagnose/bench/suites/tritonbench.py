"""TritonBench-G / TritonBench-T (thunlp/TritonBench): a kernel file whose code (Triton kernels and
their Python wrappers) and a test part are separated by a long line of `#`::

    @triton.jit
    def add_kernel(...): ...  # and its wrapper, add(x, y)
    ##################################################################################################
    def test_add():
        results = {}
        results["test_case_1"] = add(torch.randn(16, device='cuda'), torch.randn(16, device='cuda'))
        return results
    result_gold = test_add()

A separator is a line of at least 20 `#` and nothing else (TritonBench's are 146). The suite folder may
be the checkout's root (`data/TritonBench_G_v1/` and `data/TritonBench_T_v1/` are then the tasks, and
nothing of `EVAL/`, `LLM_generated/` or `performance_metrics/` is) or one folder of task files.

Scoring runs the *original file's* test part twice in fresh worker subprocesses (never in this
process): once with the original code above it, once with the candidate's code. Each top-level `test_*`
function is an input group, called once per seed after `torch.manual_seed(seed)`; what it returns (a
dict of tensors, tensors, numbers, strings, or nothing, in which case what it printed) is compared with
the original's under the harness's per-dtype tolerances. Top-level statements that call a test
(`result_gold = test_add()`), and those that then use what such a call bound (`print(result_gold)`),
are dropped so that each test runs only when called. The candidate must launch at least one Triton
kernel. On the CPU the file runs on Triton's interpreter with the CPU stand-in for a GPU
(`diagnose/runtime/cpu_standin.py`): the suite's `device='cuda'` tensors land on the CPU.

Candidates (`--solutions`):

- a folder of files matched by name (`<name>.py`; its own test part, if any, is ignored);
- one of TritonBench's LLM-output files (`LLM_generated/*/*.jsonl`), matched to tasks as TritonBench's
  `EVAL/*/0_call_acc.py` matches them (`diagnose/bench/suites/tritonbench_llm.py`), each matched
  line's code written to the cache as `<name>.py`;
- none: the original is scored against itself (does the file run, is its test deterministic: each test
  call reads new memory as NaN, as the harness's check cases do, so an output the original only partly
  writes agrees with itself where it is never written instead of holding what each process's allocator
  held). A
  TritonBench-T original is a PyTorch function and launches no Triton kernel: without candidates each T
  task is an `unsupported` row saying so.

TritonBench's own verdict is reported beside diagnose's, on every row as `tritonbench`: `call` (the
file TritonBench would run, candidate code + "#"*146 + the original test part, runs to the end: its
call accuracy; for a G line the code kept is, as its evaluator keeps it, every import and function
definition of the parsed output), `exec` (that file and the original print the same stdout: its
execution accuracy) and `stdout_empty` (both printed nothing, so `exec` says only that both ran). On a
timed device, where the checkout has `performance_metrics/perf_G/golden_metrics/<name>_perf.py`, both
are also timed at that script's own shapes, and `perf_g` carries the milliseconds and TritonBench's
speedup (`diagnose/bench/suites/tritonbench_eval.py`); on the CPU it names the script, not run.

Optimize mode (`--mode optimize`) runs the agent on each TritonBench-G original as it is: the file is
a kernel module, so the agent replays the launches its own test part makes (`diagnose optimize
FILE` does the same), the original code is the reference, and the best candidate comes back as a patch
in the sweep's runs folder (`<store>.runs/<entry>/`), never beside the suite's file. A T original (PyTorch)
and a sweep with `--solutions` are `unsupported` rows saying why.

On a device each test is also timed: device events around its Triton launches, median over 20 calls of
the summed kernel time; the speedup is the original's over the candidate's. A file without a separator
or a `test_*` function is a failed row with a one-line reason; the sweep goes on.
"""

from __future__ import annotations

import ast
import re
import tempfile
from pathlib import Path

from diagnose import syntax
from diagnose.bench.suites import tolerance
from diagnose.bench.suites.base import (
    Row,
    SuiteTask,
    failed,
    hidden,
    keep,
    make_entry,
    match_solution,
    unsupported,
    with_tokens,
)
from diagnose.bench.suites.tritonbench_eval import (  # noqa: F401 - compare, flat: this adapter's API
    compare,
    flat,
    install_standin,
    kernel_ms,
    perf_script,
    perf_summary,
    perf_times,
    predict_text,
    run_script,
    suite_kind,
    tritonbench_verdict,
)
from diagnose.bench.suites.tritonbench_llm import match_lines, materialize, read_jsonl, tritonbench_code
from diagnose.runtime.runner import call
from diagnose.runtime.devices import interpreted, timed
from diagnose.toolchain.placement import require
from diagnose.verify import tensors

MODES = ("score", "optimize")
SEPARATOR = re.compile(r"^#{20,}\s*$", re.MULTILINE)
ENTRY = "diagnose.bench.suites.tritonbench_eval:run_tests"
DATA = ("data/TritonBench_G_v1", "data/TritonBench_T_v1")
# TritonBench's own separator, as its evaluator writes candidate files.
TB_SEPARATOR = "#" * 146
T_NOT_OPTIMIZED = (
    "optimize mode runs the agent on an original's Triton kernels, and a TritonBench-T original is a "
    "PyTorch function (an LLM output given as its candidate would become its own reference)"
)
NOT_WITH_SOLUTIONS = (
    "optimize mode runs the agent on the originals as they are (their own test part supplies the "
    "launches); --solutions is for score mode"
)
T_NEEDS_CANDIDATE = (
    "a TritonBench-T original is a PyTorch function and launches no Triton kernel: give "
    "candidates with --solutions (a folder, or one of TritonBench's LLM_generated/*.jsonl)"
)


def split(source: str, name: str) -> tuple[str, str]:
    """(code part, test part) of a TritonBench file; ValueError when there is no separator."""
    found = SEPARATOR.search(source)
    if not found:
        raise ValueError(f"{name}: no separator line of `#` between the code and its test")
    return source[: found.start()], source[found.end() :]


def parsed(source: str, name: str) -> ast.Module:
    try:
        return syntax.parse(source, filename=name)
    except SyntaxError as exc:
        raise ValueError(f"{name}:{exc.lineno}: syntax error: {exc.msg}") from None


def test_names(test_part: str, name: str) -> list[str]:
    tree = parsed(test_part, name)
    names = [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name.startswith("test") and len(n.args.args) == len(n.args.defaults)
    ]
    if not names:
        raise ValueError(f"{name}: the test part has no test_* function without arguments")
    return names


def bound_names(node: ast.stmt) -> set[str]:
    """Names a top-level statement binds (assignment targets, loop variables, `with ... as`)."""
    targets = [
        t
        for n in ast.walk(node)
        for t in (
            n.targets
            if isinstance(n, ast.Assign)
            else [n.target]
            if isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.For, ast.NamedExpr))
            else [i.optional_vars for i in n.items if i.optional_vars]
            if isinstance(n, ast.With)
            else []
        )
    ]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def without_calls(test_part: str, name: str) -> str:
    """The test part with its top-level statements that call a test function removed, and those that
    then read a name only such a removed statement bound (`print(result_gold)`)."""
    tree = parsed(test_part, name)
    tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")}
    drop, dropped_names = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
        runs_test = any(isinstance(c.func, ast.Name) and c.func.id in tests for c in calls)
        reads_dropped = bool(
            {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} & dropped_names
        )
        if runs_test or reads_dropped:
            drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            dropped_names |= bound_names(node)
    return "\n".join(line for i, line in enumerate(test_part.splitlines(), 1) if i not in drop) + "\n"


def code_part(source: str) -> str:
    found = SEPARATOR.search(source)
    return source[: found.start()] if found else source


def task_folders(root: Path) -> list[Path]:
    """The folders of task files: a checkout's `data/TritonBench_G_v1` and `_T_v1`, or `root` itself."""
    found = [root / d for d in DATA if (root / d).is_dir()]
    return found or [root]


def load(root: Path, options) -> list[SuiteTask]:
    solutions = Path(options.solutions) if options.solutions else None
    jsonl = solutions if solutions is not None and solutions.is_file() else None
    if solutions is not None and jsonl is None and not solutions.is_dir():
        raise ValueError(f"{solutions}: --solutions is a folder or a TritonBench .jsonl file")
    paths = [
        p
        for folder in task_folders(root)
        for p in sorted(folder.rglob("*.py"))
        if not p.name.startswith("_")
        and not hidden(p, folder)
        and not (solutions and solutions.is_dir() and p.resolve().is_relative_to(solutions.resolve()))
    ]
    sources, problems = {}, {}
    for path in paths:
        try:
            code, test = split(path.read_text(encoding="utf-8"), path.name)
            parsed(code, path.name)
            test_names(test, path.name)
            sources[path] = code
        except (ValueError, UnicodeDecodeError) as exc:
            problems[path] = str(exc)
    if jsonl is not None:
        matched = {}
        for folder in task_folders(root):
            mine = {p: c for p, c in sources.items() if p.parent == folder or folder in p.parents}
            matched.update(match_lines(read_jsonl(jsonl), mine, root))
        written = materialize(jsonl, matched)
    tasks = []
    for path in paths:
        if jsonl is not None:
            solution = written.get(path)
        else:
            solution = match_solution(root, path, solutions) if solutions else path
        problem = problems.get(path)
        if problem is None and solution is None:
            problem = f"{path.name}: no solution for it in {solutions}"
        files = [path] + ([solution] if solution and solution != path else [])
        tasks.append(SuiteTask(make_entry(root, path, files), tuple(files), solution, problem))
    return keep(tasks, options.pattern)


def optimize_task(task: SuiteTask, options, folder: Path, agent) -> list[Row]:
    """Optimize mode: the agent on a TritonBench-G original as it is, a kernel module whose own test part
    supplies the launches (`diagnose.capture.own_tests`); T originals and `--solutions` are unsupported
    rows saying why. `agent(path) -> rows` writes the module's patch to the entry's runs folder."""
    if task.problem:
        return failed("load_error", task.problem)
    if suite_kind(task.entry.path.parent) == "T":
        return unsupported(T_NOT_OPTIMIZED)
    if task.solution != task.entry.path:
        return unsupported(NOT_WITH_SOLUTIONS)
    return agent(task.entry.path)


# --- parent side -------------------------------------------------------------------------------------


def score(task: SuiteTask, options) -> list[Row]:
    if task.problem:
        return failed("load_error", task.problem)
    original = task.entry.path
    kind = suite_kind(original.parent)
    if kind == "T" and task.solution == original:
        return [
            (
                "*",
                "failed",
                {"failure": {"kind": "unsupported", "message": T_NEEDS_CANDIDATE, "log_tail": ""}, "failed_checks": []},
            )
        ]
    where = require(options.device)
    runner = where.runner_options() if hasattr(where, "runner_options") else {"interpret": interpreted(options.device)}
    code, test_part = split(original.read_text(encoding="utf-8"), original.name)
    tests = test_names(test_part, original.name)
    test = without_calls(test_part, original.name)
    candidate_code = code_part(task.solution.read_text(encoding="utf-8"))
    try:
        parsed(candidate_code, task.solution.name)
    except ValueError as exc:
        return [
            (
                "*",
                "failed",
                {"failure": {"kind": "candidate_error", "message": str(exc), "log_tail": ""}, "failed_checks": []},
            )
        ]
    raw = predict_text(task.solution) if task.solution != original else None
    scripts = {
        "original": code + "\n" + TB_SEPARATOR + "\n" + test_part,
        "candidate": (tritonbench_code(raw, kind) if raw is not None else candidate_code)
        + "\n"
        + TB_SEPARATOR
        + "\n"
        + test_part,
    }
    sides = {"original": code, "candidate": candidate_code}
    perf, shapes = perf_script(original)
    with tempfile.TemporaryDirectory(prefix="diagnose-tritonbench-") as job:
        results = {}
        for side, part in sides.items():
            path = Path(job, side, original.name)
            path.parent.mkdir()
            path.write_text(part + "\n\n" + test)
            whole = Path(job, side, "whole", original.name)
            whole.parent.mkdir()
            whole.write_text(scripts[side])
            payload = {
                "path": str(path),
                "folder": str(original.resolve().parent),
                "tests": tests,
                "side": side,
                "seeds": list(range(options.seeds)),
                "job_dir": job,
                "timed": timed(options.device),
                "device": options.device,
                "script": str(whole),
                "stem": original.stem,
                "perf_script": str(perf) if perf else None,
            }
            result = call(ENTRY, payload, timeout_s=options.timeout_s, **runner)
            if not result.ok:
                if side == "original":
                    return failed(
                        "load_error", f"{original.name}: the original's test failed: {result.failure.message}"
                    )
                return [("*", "failed", {"failure": result.failure.to_dict(), "failed_checks": []})]
            results[side] = result.value
        own = tritonbench_verdict(results)
        perf_g = perf_summary(results, perf, shapes)
        rows = []
        for name in tests:
            pairs = [
                (o, c)
                for o, c in zip(results["original"]["cases"], results["candidate"]["cases"])
                if o["group"] == name
            ]
            overrides = dict(tolerance.overrides(options.tolerance))
            verdicts = [compare(tensors.load(o["outputs"]), tensors.load(c["outputs"]), overrides) for o, c in pairs]
            correct = all(v[0] for v in verdicts)
            silent = [f"seed {c['seed']}" for _, c in pairs if c["launches"] < 1]
            checks = [f"launches_triton: no Triton kernel launched ({', '.join(silent)})"] if silent else []
            ref_ms = results["original"]["times_ms"].get(name)
            cand_ms = results["candidate"]["times_ms"].get(name)
            rows.append(
                (
                    name,
                    "passed" if correct and not checks else "failed",
                    {
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
                        "tritonbench": own,
                        "perf_g": perf_g,
                    },
                )
            )
    return with_tokens(rows, task.solution if task.solution != original else None)
