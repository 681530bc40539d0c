"""MultiKernelBench (wzzll123/MultiKernelBench): its `reference/<category>/<op>.py` tasks as they ship,
with Triton (or triton-ascend) solutions.

The suite folder may be the checkout's root (its `reference/` folder holds the tasks; nothing of
`backends/`, `utils/`, `prompts/` is one) or a folder of task files. Entries are `<category>/<op>`.
Three kinds of task, told apart by their top-level names:

- classic (`class Model`, `get_inputs()`, `get_init_inputs()`: 300 tasks, KernelBench's format): scored
  as KernelBench problems (`diagnose/bench/suites/kernelbench.py`), their size constants scaled down
  on the CPU;
- NPUKernelBench (`get_input_groups()` reading `<op>.json` beside it: 101 tasks): the `.json` holds one
  case a line (`{"inputs": [{"name", "type": "tensor"|"attr", "dtype": "bf16"|"float32"|..., "shape",
  "value", ...}], ...}`, short dtype names as shipped) and the reference's own `get_input_groups()`
  turns it into inputs. Each case is an input group (`case<i>`), built on its own: the reference
  reads the `.json` through `open`, and while a group is built its module's `open` serves that one
  case's line. On the CPU a few cases (`CPU_CASES`: the first, any with an empty tensor, then new
  dtype combinations) run as `test_case<i>`, their dimensions scaled down
  (`diagnose/bench/suites/cpu_shapes.py`; rows name the shapes used); on a device every case runs as
  shipped;
- diagnose's own (`get_input_groups()` plus `<op>.jsonl` of named cases, documented in `read_cases`).

Solutions: `--solutions DIR` (`<op>.py`, or MultiKernelBench's own output `<op>.txt`, an LLM response
whose first fenced code block is the code, as its `extract_first_code` takes it), else `<op>_triton.py`
beside the task; with neither, the task is scored against itself (a self-check, see kernelbench.py).
`--tolerance multikernelbench` is its checker's `atol = rtol = 1e-4` for every floating dtype and 5
trials of a classic task; every row carries its verdict (`multikernelbench.correct`) beside ours.
Its "launches a Triton kernel" check is ours, which does not ask a case whose outputs are empty to
launch anything. The suite's files are never written: generated task files go to a scratch folder.

Optimize mode (`--mode optimize`) runs the agent on each solution's `ModelNew` as it is, the task its
reference, as KernelBench's adapter does (`diagnose/bench/suites/kernelbench.py`): one task file in the
sweep's runs folder holds the solution's code and, bound last, the task's `Model`, `get_init_inputs`
and its input groups (the same cases, and the same CPU scaling, as score mode), whatever the solution
defines. A task without a solution is a failed row.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path

from diagnose.bench.suites.base import (
    Row,
    SuiteTask,
    failed,
    hidden,
    keep,
    make_entry,
    match_solution,
    merged_task,
    python_problem,
    verify_rows,
    with_tokens,
)
from diagnose.bench.suites.kernelbench import TASK, annotate, optimize_problem, score_problem
from diagnose.bench.suites.multikernelbench_cases import (  # noqa: F401 - cpu_cases ... shipped_inputs: this adapter's API
    CPU_CASES,
    DTYPES,
    cpu_cases,
    json_groups,
    make_input,
    read_cases,
    read_shipped,
    shipped_inputs,
)
from diagnose.knobs import cache_root

MODES = ("score", "optimize")
NO_SOLUTION = (
    "optimize mode runs the agent on a solution's ModelNew and this task has none: give --solutions "
    "or put <op>_triton.py beside it"
)
GROUPS_NAMES = ("Model", "get_init_inputs", "get_input_groups")
CLASSIC_NAMES = ("Model", "get_inputs", "get_init_inputs")
SOLUTION_SUFFIX = "_triton"
FENCED = re.compile(r"```(.*?)```", re.DOTALL)

JSONL_GROUPS = """CASES = {cases_json!r}


def get_input_groups():
    import json

    from diagnose.bench.suites.multikernelbench_cases import make_input

    own = _problem.get_input_groups()
    groups = dict(own) if isinstance(own, dict) else {{str(i): g for i, g in enumerate(own)}}
    for case in json.loads(CASES):
        groups[case["name"]] = lambda case=case: [make_input(spec) for spec in case["inputs"]]
    return groups
"""
JSON_GROUPS = """

def get_input_groups():
    from diagnose.bench.suites.multikernelbench_cases import json_groups

    return json_groups(_problem, {cases!r}, {device!r}, {record!r})
"""

FIRST_GROUP = """

def get_inputs():
    first = next(iter(get_input_groups().values()))
    return list(first() if callable(first) else first)
"""


def suite_root(root: Path) -> Path:
    return root / "reference" if (root / "reference").is_dir() else root


def find_solution(root: Path, reference: Path, solutions: Path | None) -> Path | None:
    if solutions is not None:
        return match_solution(root, reference, solutions) or match_solution(root, reference, solutions, ".txt")
    beside = reference.with_name(f"{reference.stem}{SOLUTION_SUFFIX}.py")
    return beside if beside.is_file() else None


def code_of(solution: Path) -> Path:
    """A `.py` solution as it is; MultiKernelBench's `<op>.txt` response as its first fenced code block,
    written to the cache."""
    if solution.suffix == ".py":
        return solution

    found = FENCED.search(solution.read_text(encoding="utf-8").strip())
    if not found:
        raise ValueError(f"{solution.name}: no fenced code block in the response")
    code = re.sub(r"^(python|py|triton)\s*\n", "", found.group(1).strip() + "\n")
    out = cache_root() / "multikernelbench" / hashlib.sha256(code.encode()).hexdigest()[:16] / f"{solution.stem}.py"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(code)
    return out


def task_problem(path: Path) -> tuple[str | None, Path | None]:
    """Why the file is no task (or None), and its cases file where it has one."""
    problem = python_problem(path, GROUPS_NAMES, "reference")
    if problem is not None:
        classic = python_problem(path, CLASSIC_NAMES, "reference")
        return (None if classic is None else problem if "get_inputs" in classic else classic), None
    for cases in (path.with_suffix(".jsonl"), path.with_suffix(".json")):
        if cases.is_file():
            try:
                (read_cases if cases.suffix == ".jsonl" else read_shipped)(cases)
            except (ValueError, UnicodeDecodeError) as exc:
                return str(exc), cases
            return None, cases
    return f"{path.name}: no {path.stem}.jsonl or {path.stem}.json of input cases beside it", None


def load(root: Path, options) -> list[SuiteTask]:
    solutions = Path(options.solutions) if options.solutions else None
    root = suite_root(root)
    tasks = []
    for path in sorted(root.rglob("*.py")):
        if path.name.startswith("_") or path.stem.endswith(SOLUTION_SUFFIX) or hidden(path, root):
            continue
        if solutions and path.resolve().is_relative_to(solutions.resolve()):
            continue
        problem, cases = task_problem(path)
        solution = find_solution(root, path, solutions)
        files = [path] + ([cases] if cases else []) + ([solution] if solution else [])
        if problem is None and solutions is not None and solution is None:
            problem = f"{path.name}: no solution for it in {solutions}"
        if problem is None and solution is not None and solution.suffix == ".py":
            problem = python_problem(solution, ("ModelNew",), "solution")
        tasks.append(SuiteTask(make_entry(root, path, files), tuple(files), solution, problem))
    return keep(tasks, options.pattern)


def cases_file(task: SuiteTask) -> Path | None:
    """The task's file of input cases (`.json` as shipped, or diagnose's `.jsonl`), None for a classic task."""
    return next((f for f in task.files[1:] if f.suffix in (".json", ".jsonl")), None)


def reference_source(reference: Path, cases: Path, device: str, record: Path) -> str:
    """A generated reference file over a task with a cases file: the task's `Model` and `get_init_inputs`,
    a group per case (on the CPU the chosen cases scaled down, the choice kept in `record`)."""
    head = TASK.format(
        path=str(reference.resolve()), device="as written", record=None, how=f"with the cases of {cases.name}"
    )
    groups = (
        JSONL_GROUPS.format(cases_json=json.dumps(read_cases(cases)))
        if cases.suffix == ".jsonl"
        else JSON_GROUPS.format(cases=str(cases.resolve()), device=device, record=str(record))
    )
    return head + "Model = _problem.Model\nget_init_inputs = _problem.get_init_inputs\n" + groups + FIRST_GROUP


def with_case_shapes(rows: list[Row], record: Path) -> list[Row]:
    """Rows of the CPU's scaled cases naming the shapes used (from `record`, as `json_groups` chose them)."""
    chosen = json.loads(record.read_text()) if record.is_file() else {}
    for group, _, data in rows:
        if group in chosen:
            factor = chosen[group]["factor"]
            how = "as shipped (small enough for the CPU)" if factor == 1 else f"scaled for the CPU (1/{factor})"
            data["cpu_shapes"] = f"{how}: shapes {chosen[group]['shapes']}"
    return rows


def score(task: SuiteTask, options) -> list[Row]:
    if task.problem:
        return failed("load_error", task.problem)
    reference = task.files[0]
    cases = cases_file(task)
    solution = code_of(task.solution) if task.solution else None
    if cases is None:
        return with_tokens(score_problem(reference, solution, options, "multikernelbench"), task.solution)
    with tempfile.TemporaryDirectory(prefix="diagnose-mkb-") as scratch:
        record = Path(scratch, "cpu_shapes.json")
        wrapper = Path(scratch, f"{reference.stem}.py")
        wrapper.write_text(reference_source(reference, cases, options.device, record))
        candidate = solution
        if solution is None:
            candidate = Path(scratch, f"{reference.stem}_self.py")
            candidate.write_text(
                TASK.format(
                    path=str(reference.resolve()),
                    device="as written",
                    record=None,
                    how=f"with the cases of {cases.name}",
                )
                + "ModelNew = _problem.Model\n"
            )
        rows = verify_rows(wrapper, candidate, options)
        rows = [annotate(row, "multikernelbench", options, None, solution is None) for row in rows]
        rows = with_case_shapes(rows, record)
    return with_tokens(rows, task.solution)


def optimize_task(task: SuiteTask, options, folder: Path, agent) -> list[Row]:
    """Optimize mode: the agent on the solution's `ModelNew` (a `.txt` response's code block), the task
    its reference, through one merged task file in `folder` (`diagnose/bench/suites/base.py`); a task
    without a solution is a failed row."""
    if task.problem:
        return failed("load_error", task.problem)
    if task.solution is None:
        return failed("no_solution", NO_SOLUTION)
    reference, cases, solution = task.files[0], cases_file(task), code_of(task.solution)
    if cases is None:
        return optimize_problem(reference, solution, options, folder, agent)
    record = folder / "cpu_shapes.json"
    record.unlink(missing_ok=True)  # a rerun chooses its cases again: the task may have changed
    path = merged_task(
        solution, reference_source(reference, cases, options.device, record), folder / f"{reference.stem}.py"
    )
    return with_case_shapes(agent(path), record)
