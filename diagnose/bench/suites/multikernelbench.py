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
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path

from diagnose.bench.suites.base import (Row, SuiteTask, failed, keep, make_entry, match_solution, python_problem,
                                        verify_rows, with_tokens)
from diagnose.bench.suites.kernelbench import TASK, annotate, score_problem

MODES = ("score",)
GROUPS_NAMES = ("Model", "get_init_inputs", "get_input_groups")
CLASSIC_NAMES = ("Model", "get_inputs", "get_init_inputs")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")
SOLUTION_SUFFIX = "_triton"
CPU_CASES = 3
FENCED = re.compile(r"```(.*?)```", re.DOTALL)

JSONL_GROUPS = '''CASES = {cases_json!r}


def get_input_groups():
    import json

    from diagnose.bench.suites.multikernelbench import make_input

    own = _problem.get_input_groups()
    groups = dict(own) if isinstance(own, dict) else {{str(i): g for i, g in enumerate(own)}}
    for case in json.loads(CASES):
        groups[case["name"]] = lambda case=case: [make_input(spec) for spec in case["inputs"]]
    return groups
'''
JSON_GROUPS = '''

def get_input_groups():
    from diagnose.bench.suites.multikernelbench import json_groups

    return json_groups(_problem, {cases!r}, {device!r}, {record!r})
'''

FIRST_GROUP = """

def get_inputs():
    first = next(iter(get_input_groups().values()))
    return list(first() if callable(first) else first)
"""


def check_input(spec, where: str) -> None:
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: an input must be an object, not {type(spec).__name__}")
    if "value" in spec:
        return
    shape = spec.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"{where}: `shape` must be a list of non-negative integers")
    if spec.get("dtype", "float32") not in DTYPES:
        raise ValueError(f"{where}: unknown dtype {spec.get('dtype')!r}; dtypes: {', '.join(DTYPES)}")


def read_cases(path: Path) -> list[dict]:
    """The cases of diagnose's JSON-lines file: `{"name": "test_small", "inputs": [{"shape": [4, 33],
    "dtype": "float32"}, {"shape": [4], "dtype": "int64", "low": 0, "high": 33}, {"value": 0.5}]}` a line
    (`test...` groups run on the CPU; floats standard normal times `scale`, integers in [`low`, `high`),
    default [0, 100)); blank lines and `//` lines skipped; a bad line raises ValueError naming `file:line`."""
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        where = f"{path.name}:{number}"
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: malformed JSON line: {exc.msg} (column {exc.colno})") from None
        if not isinstance(case, dict) or not isinstance(case.get("name"), str) or not isinstance(case.get("inputs"), list):
            raise ValueError(f"{where}: a case needs a string `name` and a list `inputs`")
        for i, spec in enumerate(case["inputs"]):
            check_input(spec, f"{where}: input {i}")
        cases.append({"name": case["name"], "inputs": case["inputs"]})
    if not cases:
        raise ValueError(f"{path.name}: no input cases")
    return cases


def read_shipped(path: Path) -> list[dict]:
    """The cases of an NPUKernelBench `.json` (one JSON object a line, each with a list `inputs`)."""
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name}:{number}: malformed JSON line: {exc.msg} (column {exc.colno})") from None
        if not isinstance(case, dict) or not isinstance(case.get("inputs"), list):
            raise ValueError(f"{path.name}:{number}: a case needs a list `inputs`")
        cases.append(case)
    if not cases:
        raise ValueError(f"{path.name}: no input cases")
    return cases


def cpu_cases(cases: list[dict]) -> list[int]:
    """The cases run on the CPU: the first, the first with an empty tensor, then new dtype combinations."""
    def dtypes(case):
        return tuple(str(s.get("dtype")) for s in case["inputs"] if isinstance(s, dict) and "shape" in s)

    empty = [i for i, c in enumerate(cases) if any(isinstance(s, dict) and 0 in (s.get("shape") or [1])
                                                   for s in c["inputs"])]
    chosen = [0] + empty[:1]
    for i, case in enumerate(cases):
        if len(chosen) >= CPU_CASES:
            break
        if i not in chosen and dtypes(case) not in {dtypes(cases[j]) for j in chosen}:
            chosen.append(i)
    return sorted(set(chosen))


def make_input(spec: dict):
    """One input of diagnose's JSON-lines format (worker side; called after the harness seeded torch)."""
    import torch

    if "value" in spec:
        return spec["value"]
    shape, dtype = tuple(spec["shape"]), getattr(torch, spec.get("dtype", "float32"))
    if dtype == torch.bool:
        return torch.rand(shape) < 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape) * float(spec.get("scale", 1.0))).to(dtype)
    return torch.randint(int(spec.get("low", 0)), int(spec.get("high", 100)), shape, dtype=dtype)


def shipped_inputs(module, case: dict) -> list:
    """The inputs the reference's own `get_input_groups()` builds from one case (worker side)."""
    import builtins
    import io

    line = json.dumps(case) + "\n"
    module.open = lambda path, *a, **k: io.StringIO(line) if str(path).endswith(".json") else builtins.open(path, *a, **k)
    try:
        groups = module.get_input_groups()
        first = next(iter(groups.values())) if isinstance(groups, dict) else groups[0]
        return list(first() if callable(first) else first)
    finally:
        del module.open


def json_groups(module, cases_path: str, device: str, record: str) -> dict:
    """The input groups of an NPUKernelBench task (worker side): every case on a device; on the CPU the
    `cpu_cases`, scaled down, as `test_case<i>` (the scale chosen once, kept in `record`)."""
    from diagnose.bench.suites import cpu_shapes

    cases = read_shipped(Path(cases_path))
    if device != "cpu":
        return {f"case{i}": (lambda c=c: shipped_inputs(module, c)) for i, c in enumerate(cases)}
    chosen = json.loads(Path(record).read_text()) if Path(record).is_file() else {}
    if not chosen:
        for i in cpu_cases(cases):
            tries = [f for f in cpu_shapes.FACTORS if cpu_shapes.case_elements(cpu_shapes.scale_case(cases[i], f))
                     <= cpu_shapes.ELEMENTS] + [1]
            factor = next((f for f in tries if cpu_shapes.runs(module, shipped_inputs(module, cpu_shapes.scale_case(
                cases[i], f)))), 1)
            chosen[f"test_case{i}"] = {"index": i, "factor": factor, "shapes": [
                s.get("shape") for s in cpu_shapes.scale_case(cases[i], factor)["inputs"] if isinstance(s, dict)
                and "shape" in s]}
        Path(record).write_text(json.dumps(chosen))
    return {name: (lambda c=cpu_shapes.scale_case(cases[v["index"]], v["factor"]): shipped_inputs(module, c))
            for name, v in chosen.items()}


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
    from diagnose.knobs import cache_root

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
        if path.name.startswith("_") or path.stem.endswith(SOLUTION_SUFFIX):
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


def score(task: SuiteTask, options) -> list[Row]:
    if task.problem:
        return failed("load_error", task.problem)
    reference = task.files[0]
    cases = next((f for f in task.files[1:] if f.suffix in (".json", ".jsonl")), None)
    solution = code_of(task.solution) if task.solution else None
    if cases is None:
        return with_tokens(score_problem(reference, solution, options, "multikernelbench"), task.solution)
    with tempfile.TemporaryDirectory(prefix="diagnose-mkb-") as scratch:
        record = str(Path(scratch, "cpu_shapes.json"))
        head = TASK.format(path=str(reference.resolve()), device="as written", record=None,
                           how=f"with the cases of {cases.name}")
        groups = (JSONL_GROUPS.format(cases_json=json.dumps(read_cases(cases))) if cases.suffix == ".jsonl"
                  else JSON_GROUPS.format(cases=str(cases.resolve()), device=options.device, record=record))
        wrapper = Path(scratch, f"{reference.stem}.py")
        wrapper.write_text(head + "Model = _problem.Model\nget_init_inputs = _problem.get_init_inputs\n" + groups
                           + FIRST_GROUP)
        candidate = solution
        if solution is None:
            candidate = Path(scratch, f"{reference.stem}_self.py")
            candidate.write_text(head + "ModelNew = _problem.Model\n")
        rows = verify_rows(wrapper, candidate, options)
        chosen = json.loads(Path(record).read_text()) if Path(record).is_file() else {}
    rows = [annotate(row, "multikernelbench", options, None, solution is None) for row in rows]
    for group, _, data in rows:
        if group in chosen:
            factor = chosen[group]["factor"]
            how = "as shipped (small enough for the CPU)" if factor == 1 else f"scaled for the CPU (1/{factor})"
            data["cpu_shapes"] = f"{how}: shapes {chosen[group]['shapes']}"
    return with_tokens(rows, task.solution)
