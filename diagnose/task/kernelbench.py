"""Loading a kernel file into a `Task`, in the task format of KernelBench.

A task file holds a PyTorch reference `class Model(nn.Module)`, `get_inputs()` (the example inputs, CPU
tensors), `get_init_inputs()` (the constructor's arguments) and the Triton implementation
`class ModelNew`. Optional:

- `get_input_groups()`: several input sets (several shapes), a dict from a group name to a list of
  inputs, or to a function returning one. Groups named `test...` are small enough for the CPU
  interpreter; the others are sized for a device.
- `ROOFLINE`: a dict of `bytes` and/or `flops` (numbers, or functions of the inputs) where the
  roofline cannot derive them.

Reference and candidate may also be two files: the reference file gives `Model`, `get_inputs` and
`get_init_inputs`; the candidate file gives `ModelNew`. Even in one file, the harness always takes the
inputs and the reference from the reference file, so a candidate cannot change what it is checked on.

The parent process only reads the source (`load_task` never executes it); `import_task_file` is for
worker processes.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from diagnose import syntax
from diagnose.errors import UsageError
from diagnose.task.harness import header
from diagnose.task.module import jit_functions

REFERENCE_NAMES = ("Model", "get_inputs", "get_init_inputs")
CANDIDATE_NAME = "ModelNew"


@dataclass(frozen=True)
class Task:
    """A task as read from its files: where each part lives, and what the source defines."""

    reference_path: Path
    candidate_path: Path
    name: str
    kernels: tuple[str, ...]
    has_input_groups: bool
    # A kernel module's task (`diagnose/task/harness.py`): the user's module it was made from.
    origin: Path | None = None

    @property
    def two_files(self) -> bool:
        return self.reference_path != self.candidate_path

    def payload(self) -> dict:
        """The task as a JSON payload for a worker."""
        return {"reference": str(self.reference_path), "candidate": str(self.candidate_path)}


def parse_file(path: Path) -> ast.Module:
    """Parse a Python file; every failure is a one-line `UsageError` naming the file and line."""
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a file")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return syntax.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}:{exc.offset or 0}: syntax error: {exc.msg}") from None


def top_level_names(module: ast.Module) -> dict[str, int]:
    """Names bound at module level (classes, functions, assignments, imports) and their lines."""
    names: dict[str, int] = {}
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node.lineno
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node.lineno
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node.lineno
    return names


def jit_kernels(module: ast.Module) -> tuple[str, ...]:
    """Names of the functions made kernels by `triton.jit` (`diagnose.task.module.jit_functions`)."""
    return jit_functions(module)


def _require(path: Path, names: dict[str, int], wanted: tuple[str, ...], role: str) -> None:
    missing = [n for n in wanted if n not in names]
    if missing:
        listed = ", ".join(f"`{n}`" for n in missing)
        last = max(names.values(), default=1)
        raise UsageError(
            f"{path}:{last}: the {role} has no {listed} (a task needs Model, get_inputs, get_init_inputs and ModelNew)"
        )


def _resolved(path: str | Path) -> Path:
    path = Path(path)
    return path.resolve() if path.exists() else path


def load_task_file(path: str | Path, candidate: str | Path | None = None) -> Task:
    """Read a task in the task format from one file, or from a reference file and a candidate file."""
    reference_path = _resolved(path)
    candidate_path = _resolved(candidate) if candidate else reference_path
    reference_tree = parse_file(reference_path)
    _require(reference_path, top_level_names(reference_tree), REFERENCE_NAMES, "reference")
    candidate_tree = reference_tree if candidate_path == reference_path else parse_file(candidate_path)
    _require(candidate_path, top_level_names(candidate_tree), (CANDIDATE_NAME,), "candidate")
    return Task(
        reference_path=reference_path,
        candidate_path=candidate_path,
        name=reference_path.stem,
        kernels=jit_kernels(candidate_tree),
        has_input_groups="get_input_groups" in top_level_names(reference_tree),
        origin=_origin(reference_path),
    )


def _origin(path: Path) -> Path | None:
    found = header(path.read_text(encoding="utf-8", errors="replace"))
    return found.origin if found else None


def import_task_file(path: str | Path) -> ModuleType:
    """Import a task file as a fresh module (worker side only: this runs the user's code).

    The file's folder goes on `sys.path` so that a task can import its neighbours. A kernel module's task
    file (`diagnose/task/harness.py`) is imported as its module is in its project: its package root on
    `sys.path` and a name in its package (`liger_kernel.ops.rms_norm__diagnose_1a2b`), so that its
    relative imports work; the suffix keeps the original module, a candidate and the reference apart
    when one process holds several.
    """
    path = Path(path).resolve()
    folder = str(path.parent)
    found = header(path.read_text(encoding="utf-8", errors="replace"))
    if found is not None:
        folder = str(found.root)
        name = f"{found.module}__diagnose_{uuid.uuid4().hex[:8]}"
    else:
        name = f"diagnose_task_{path.stem}_{uuid.uuid4().hex[:8]}"
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
