"""MultiKernelBench's input cases (`diagnose/bench/suites/multikernelbench.py` documents the formats):
reading them, choosing and scaling the CPU's, and building a case's inputs on the worker side.

- diagnose's own `<op>.jsonl`: one named case a line, inputs drawn from `shape`/`dtype` specs
  (`read_cases`, `make_input`);
- NPUKernelBench's shipped `<op>.json`: one case a line, turned into inputs by the reference's own
  `get_input_groups()` while its module's `open` serves that case's line (`read_shipped`,
  `shipped_inputs`); on the CPU a few cases (`cpu_cases`) run, scaled down (`json_groups`).
"""

from __future__ import annotations

import builtins
import io
import json
from pathlib import Path

from diagnose.bench.suites import cpu_shapes

DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")
CPU_CASES = 3


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
        if (
            not isinstance(case, dict)
            or not isinstance(case.get("name"), str)
            or not isinstance(case.get("inputs"), list)
        ):
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

    empty = [
        i for i, c in enumerate(cases) if any(isinstance(s, dict) and 0 in (s.get("shape") or [1]) for s in c["inputs"])
    ]
    chosen = [0] + empty[:1]
    for i, case in enumerate(cases):
        if len(chosen) >= CPU_CASES:
            break
        if i not in chosen and dtypes(case) not in {dtypes(cases[j]) for j in chosen}:
            chosen.append(i)
    return sorted(set(chosen))


def make_input(spec: dict):
    """One input of diagnose's JSON-lines format (worker side; called after the harness seeded torch)."""
    import torch  # deferred: torch is heavy

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
    line = json.dumps(case) + "\n"
    module.open = lambda path, *a, **k: (
        io.StringIO(line) if str(path).endswith(".json") else builtins.open(path, *a, **k)
    )
    try:
        groups = module.get_input_groups()
        first = next(iter(groups.values())) if isinstance(groups, dict) else groups[0]
        return list(first() if callable(first) else first)
    finally:
        del module.open


def json_groups(module, cases_path: str, device: str, record: str) -> dict:
    """The input groups of an NPUKernelBench task (worker side): every case on a device; on the CPU the
    `cpu_cases`, scaled down, as `test_case<i>` (the scale chosen once, kept in `record`)."""
    cases = read_shipped(Path(cases_path))
    if device != "cpu":
        return {f"case{i}": (lambda c=c: shipped_inputs(module, c)) for i, c in enumerate(cases)}
    chosen = json.loads(Path(record).read_text()) if Path(record).is_file() else {}
    if not chosen:
        for i in cpu_cases(cases):
            tries = [
                f
                for f in cpu_shapes.FACTORS
                if cpu_shapes.case_elements(cpu_shapes.scale_case(cases[i], f)) <= cpu_shapes.ELEMENTS
            ] + [1]
            factor = next(
                (
                    f
                    for f in tries
                    if cpu_shapes.runs(module, shipped_inputs(module, cpu_shapes.scale_case(cases[i], f)))
                ),
                1,
            )
            chosen[f"test_case{i}"] = {
                "index": i,
                "factor": factor,
                "shapes": [
                    s.get("shape")
                    for s in cpu_shapes.scale_case(cases[i], factor)["inputs"]
                    if isinstance(s, dict) and "shape" in s
                ],
            }
        Path(record).write_text(json.dumps(chosen))
    return {
        name: (lambda c=cpu_shapes.scale_case(cases[v["index"]], v["factor"]): shipped_inputs(module, c))
        for name, v in chosen.items()
    }
