"""What every suite adapter shares: the task record, matching solutions to problems, failure rows,
token side files and the tolerance profile.

An adapter lists a suite checkout as `SuiteTask`s without running any of its code (files are only
read and parsed), and scores one task into store rows `(group, status, data)`, running user code only
in worker subprocesses. A problem found while listing (a missing function, a malformed JSON line, a
solution that is not there) is kept on the task as `problem` and becomes that task's failed row, so
the sweep goes on to the next task.

Solutions are matched to problems by name, in this order: the same path relative to the suite
(`level1/19_ReLU.py`), the same file stem anywhere under the solutions folder when that is unique, and
KernelBench's run naming `level_<L>_problem_<N>_sample_<S>_kernel.py` (level and the number the
problem's file name starts with).

Tokens (the optional LLM path): a solution may have a side file `<stem>.tokens.json` holding
`{"prompt": int, "completion": int, "requests": int}` as the LLM server reported them; its rows then
carry `tokens` (with `verified` 1 when the task passed). Without such a file a row carries none and the
report says "no LLM used"; nothing is ever estimated.

Optimize mode (`--mode optimize`, `diagnose/bench/optimize.py`): the agent needs one task file, and a
suite whose task is a reference plus a solution has two. `merged_task` writes one into the sweep's runs
folder (never the suite's): the solution's source as it is, less its own top-level `get_inputs`,
`get_init_inputs` and `get_input_groups`, then the adapter's reference bindings last, so `Model` and
the inputs are the reference's whatever the solution defines, and `ModelNew` (with its kernels, which
the agent rewrites) is the solution's. The agent's harness takes reference and inputs from that file
for the baseline and for every candidate, so no candidate can change them either.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from diagnose import syntax
from diagnose.bench.suite import Entry, matches
from diagnose.bench.suites import tolerance
from diagnose.errors import DiagnoseError, UsageError
from diagnose.records import Verdict
from diagnose.task import load_task, parse_file, top_level_names
from diagnose.verify.harness import CheckOptions, verify
from diagnose.verify.shapes import base_group

Row = tuple[str, str, dict]
RUN_NAME = re.compile(r"level_(\d+)_problem_(\d+)_sample_\d+_kernel$")
# A solution's own input functions: left out of a merged task file (the reference's are bound instead).
INPUT_FUNCTIONS = ("get_inputs", "get_init_inputs", "get_input_groups")


@dataclass(frozen=True)
class SuiteTask:
    """One task of a suite: the store's entry, the files it was built from, and any listing problem."""

    entry: Entry
    files: tuple[Path, ...]
    solution: Path | None = None
    problem: str | None = None


def digest(paths: list[Path] | tuple[Path, ...], extra: str = "") -> str:
    """A short hash over the files a task depends on (a changed file means a new version)."""
    h = hashlib.sha256(extra.encode())
    for path in paths:
        h.update(str(path.name).encode())
        h.update(path.read_bytes() if path.is_file() else b"<missing>")
    return h.hexdigest()[:16]


def make_entry(
    root: Path, path: Path, files: list[Path], category: str | None = None, level: int | None = None, extra: str = ""
) -> Entry:
    relative = path.relative_to(root).with_suffix("").as_posix()
    if level is None:
        found = re.search(r"level_?(\d+)", relative)
        level = int(found.group(1)) if found else None
    return Entry(
        id=relative,
        path=path,
        level=level,
        category=category or path.parent.name,
        op=path.stem,
        source_hash=digest(files, extra),
    )


def keep(tasks: list[SuiteTask], pattern: str | None) -> list[SuiteTask]:
    if not pattern:
        return tasks
    return [t for t in tasks if matches(t.entry.id, pattern)]


def match_solution(root: Path, problem: Path, solutions: Path | None, suffix: str = ".py") -> Path | None:
    """The solution file for `problem` under `solutions` (see the module docstring), or None."""
    if solutions is None or not solutions.is_dir():
        return None
    relative = problem.relative_to(root).with_suffix(suffix)
    if (solutions / relative).is_file():
        return solutions / relative
    same_stem = [p for p in solutions.rglob(f"{problem.stem}{suffix}") if p.is_file()]
    if len(same_stem) == 1:
        return same_stem[0]
    level = re.search(r"level_?(\d+)", relative.as_posix())
    number = re.match(r"(\d+)_", problem.stem)
    if level and number:
        for candidate in sorted(solutions.rglob(f"*{suffix}")):
            found = RUN_NAME.match(candidate.stem)
            if found and (int(found.group(1)), int(found.group(2))) == (int(level.group(1)), int(number.group(1))):
                return candidate
    return None


def hidden(path: Path, root: Path) -> bool:
    """Whether `path` lies in a hidden folder under `root` (`.diagnose_cache/`, `.git/`): never a task."""
    return any(part.startswith(".") for part in path.relative_to(root).parts[:-1])


def failed(kind: str, message: str) -> list[Row]:
    """The one row of a task that could not be scored, with its one-line reason."""
    return [
        (
            "*",
            "failed",
            {
                "failure": {"kind": kind, "message": message.splitlines()[0] if message else kind, "log_tail": ""},
                "failed_checks": [],
            },
        )
    ]


def unsupported(message: str) -> list[Row]:
    """The one row of a task that cannot run here, and why (it does not count as a wrong kernel)."""
    [(group, _, data)] = failed("unsupported", message)
    return [(group, "unsupported", data)]


def without_input_functions(source: str, name: str) -> str:
    """`source` less its top-level definitions and assignments of `INPUT_FUNCTIONS` (each left as a
    comment line); ValueError when it does not parse."""
    try:
        tree = syntax.parse(source, filename=name)
    except SyntaxError as exc:
        raise ValueError(f"{name}:{exc.lineno}: syntax error: {exc.msg}") from None
    lines = source.splitlines()
    for node in reversed(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {node.name}
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            names = {t.id for t in node.targets}
        else:
            continue
        if names <= set(INPUT_FUNCTIONS):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            lines[first - 1 : node.end_lineno] = [f"# {', '.join(sorted(names))}: the reference's, bound below"]
    return "\n".join(lines) + "\n"


def merged_task(solution: Path, reference: str, out: Path) -> Path:
    """Write the one task file the agent runs on (module docstring): `solution`'s code, then the
    `reference` bindings (Python source binding `Model`, `get_init_inputs` and `get_inputs` and/or
    `get_input_groups`) last. ValueError when the solution does not parse."""
    code = without_input_functions(solution.read_text(encoding="utf-8"), solution.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        f"{code}\n\n# --- diagnose: the reference, bound last so that it is the reference whatever the "
        f"solution ({solution}) defines ---\n{reference}"
    )
    return out


def read_tokens(solution: Path | None) -> dict | None:
    """The token counts of a solution's side file, or None when it has none (no LLM used)."""
    if solution is None:
        return None
    side = solution.with_name(f"{solution.stem}.tokens.json")
    if not side.is_file():
        return None
    try:
        data = json.loads(side.read_text())
        return {k: int(data.get(k, 0) or 0) for k in ("prompt", "completion", "requests")}
    except (ValueError, TypeError, AttributeError):
        return None


def with_tokens(rows: list[Row], solution: Path | None) -> list[Row]:
    """Attach a solution's token counts to its rows (each row the same entry-level counts)."""
    tokens = read_tokens(solution)
    if tokens is None:
        return rows
    verified = int(all(status == "passed" for _, status, _ in rows))
    return [(g, s, {**d, "tokens": {**tokens, "verified": verified}}) for g, s, d in rows]


def verify_rows(reference: Path, candidate: Path | None, options) -> list[Row]:
    """Verify and time `candidate`'s ModelNew (None: the reference file's own) against `reference` with
    the harness; store rows."""
    try:
        task = load_task(reference, candidate)
        verdict = verify(
            task,
            CheckOptions(
                device=options.device,
                seeds=tuple(range(options.seeds)),
                timeout_s=options.timeout_s,
                baselines=options.baselines,
                tolerances=tolerance.overrides(options.tolerance),
                device_lock=options.device_lock,
                memory_limit=getattr(options, "memory_limit", 16 * 2**30),
            ),
        )
    except DiagnoseError as exc:
        return failed("load_error", str(exc))
    return group_rows(verdict)


def read_json_object(path: Path, what: str, required: tuple[str, ...]) -> dict:
    """A JSON object file holding every `required` key; ValueError with a one-line reason otherwise."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path.name}: a {what} is a JSON object")
    missing = [k for k in required if k not in data]
    if missing:
        raise ValueError(f"{path.name}: the {what} has no {', '.join(missing)}")
    return data


def python_problem(path: Path, wanted: tuple[str, ...], role: str) -> str | None:
    """Why `path` is not a usable Python file with `wanted` top-level names, or None (parse only)."""
    try:
        names = top_level_names(parse_file(path))
    except UsageError as exc:
        return str(exc)
    missing = [n for n in wanted if n not in names]
    if missing:
        return f"{path}: the {role} has no {', '.join(f'`{n}`' for n in missing)}"
    return None


def group_rows(verdict: Verdict) -> list[tuple[str, str, dict]]:
    """One (group, status, data) per input group of the verdict."""
    failed_checks = [f"{c.name}: {c.detail}" for c in verdict.checks if not c.passed]
    if verdict.failure is not None or not verdict.cases:
        failure = verdict.failure.to_dict() if verdict.failure else None
        return [("*", "failed", {"failure": failure, "failed_checks": failed_checks})]
    out = []
    for group in dict.fromkeys(base_group(c.group) for c in verdict.cases):
        cases = [c for c in verdict.cases if base_group(c.group) == group]  # unseen shapes with their group
        correct = all(c.passed for c in cases)
        status = "passed" if verdict.passed else "failed"
        medians = {t.variant: t.median_ms for t in verdict.timings if t.group == group}
        out.append(
            (
                group,
                status,
                {
                    "correct": correct,
                    "max_abs_err": max((c.max_abs_err or 0.0) for c in cases),
                    "reasons": sorted({c.reason for c in cases if c.reason}),
                    "failed_checks": failed_checks,
                    "medians_ms": medians,
                    "stable": all(t.stable for t in verdict.timings if t.group == group and t.median_ms is not None),
                    "speedup_vs_eager": verdict.speedups("eager").get(group),
                    "speedup_vs_compile": verdict.speedups("compile").get(group),
                    "timed": any(m is not None for m in medians.values()),
                    # The whole entry's harness steps (seconds), the same on each of its groups' rows.
                    "phases": [list(step) for step in verdict.phases],
                },
            )
        )
    return out
