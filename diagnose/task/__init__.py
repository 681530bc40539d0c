"""What `diagnose` works on: a task, loaded from a kernel module as it lies in a project or from a file in
the task format of KernelBench.

- A file in the task format (`Model`, `get_inputs`, `get_init_inputs`, `ModelNew`; optionally two files,
  reference and candidate) loads as it is: `diagnose/task/kernelbench.py`.
- Any other Python file with `@triton.jit` kernels is a kernel module: its launches are replayed from
  `--call` specs or captured launches, and it becomes a task through a generated task file whose
  reference is the module's own code (`diagnose/task/kernel_module.py`, `diagnose/task/harness.py`).

`load_task` reads sources only; it never runs user code (`import_task_file` does, in workers).
"""

from __future__ import annotations

from pathlib import Path

from diagnose.errors import UsageError
from diagnose.knobs import cache_root
from diagnose.task.harness import header
from diagnose.task.kernel_module import module_task
from diagnose.task.kernelbench import (
    CANDIDATE_NAME,
    REFERENCE_NAMES,
    Task,
    import_task_file,
    jit_kernels,
    load_task_file,
    parse_file,
    top_level_names,
)
from diagnose.task.specs import Inputs

__all__ = [
    "Inputs",
    "Task",
    "import_task_file",
    "is_task_format",
    "jit_kernels",
    "load_task",
    "parse_file",
    "top_level_names",
]


def is_task_format(path: str | Path) -> bool:
    """Whether the file is written in the task format (or is a kernel module's generated task file)."""
    path = Path(path)
    tree = parse_file(path)
    names = top_level_names(tree)
    if header(path.read_text(encoding="utf-8", errors="replace")) is not None:
        return True
    return any(n in names for n in (*REFERENCE_NAMES, CANDIDATE_NAME))


def load_task(
    path: str | Path, candidate: str | Path | None = None, inputs: Inputs | None = None, cache: Path | None = None
) -> Task:
    """The task of a file: in the task format as it is, a kernel module through its replayed launches.

    `inputs` says where a kernel module's inputs come from (`--call`, `--launch`, `--reference`);
    `cache` is where its generated task file goes (default: the cache root).
    """
    path = Path(path)
    if is_task_format(path):
        if inputs and (inputs.calls or inputs.reference or inputs.launch is not None):
            raise UsageError(
                f"{path}: --call, --launch and --reference are for kernel modules; "
                "this file is in the task format (Model, get_inputs, ModelNew)"
            )
        return load_task_file(path, candidate)

    if cache is None:
        cache = cache_root()
    return module_task(path.resolve(), cache, inputs or Inputs(), Path(candidate).resolve() if candidate else None)
