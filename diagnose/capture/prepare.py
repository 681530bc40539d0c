"""The task of any file the user points at, inputs found wherever they are (what every command calls).

A file in the task format loads as it is. A kernel module takes its inputs from `--call`, then from its
captured launches, and, when there are none, from its own tests run under capture
(`diagnose/capture/own_tests.py`); the generated task file is what the layers below then work on.
`inspect` needs no more than a compile: a kernel nothing launched is compiled at a launch guessed from
its source (`diagnose/task/generate.py`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from diagnose.capture.own_tests import has_own_tests, launches_folder
from diagnose.errors import UsageError
from diagnose.knobs import cache_root
from diagnose.task import Inputs, Task, is_task_format, load_task
from diagnose.task.kernel_module import NoLaunches, inspect_task
from diagnose.task.launches import records_for


def prepare(
    path: str | Path,
    candidate: str | Path | None = None,
    inputs: Inputs | None = None,
    device: str = "cpu",
    timeout_s: float = 600.0,
) -> Task:
    inputs = inputs or Inputs()
    try:
        return load_task(path, candidate, inputs)
    except NoLaunches:
        if inputs.calls or inputs.launches or not has_own_tests(Path(path)):
            raise
    folder = launches_folder(Path(path), cache_root(), device=device, timeout_s=timeout_s)
    return load_task(path, candidate, dataclasses.replace(inputs, launches=str(folder)))


def _has_examples(path: Path) -> bool:
    text = path.read_text(errors="replace")
    return "DIAGNOSE_EXAMPLES" in text or "diagnose_examples" in text


def task_path(path: str | Path, inputs: Inputs | None = None, device: str = "cpu", timeout_s: float = 600.0) -> str:
    """The file a path-taking layer works on: the file itself in the task format (and a file of kernels
    with `DIAGNOSE_EXAMPLES` that has no other inputs), else the kernel module's generated task file."""
    path, inputs = Path(path), inputs or Inputs()
    if not path.is_file() or path.suffix != ".py" or is_task_format(path):
        return str(path)
    try:
        return str(prepare(path, None, inputs, device, timeout_s).reference_path)
    except NoLaunches:
        if inputs.calls or inputs.launch is not None or not _has_examples(path):
            raise
        return str(path)


def inspection_path(path: str | Path, inputs: Inputs | None = None) -> str:
    """What `inspect` compiles: a kernel module as one task with a group per kernel (its largest captured
    launch, else a launch guessed from its source and labelled so); any other file as it is."""
    path, inputs = Path(path), inputs or Inputs()
    if not path.is_file() or path.suffix != ".py" or is_task_format(path):
        return str(path)
    if _has_examples(path) and not inputs.calls:
        return str(path)
    if not (inputs.calls or inputs.launches or records_for(path)) and has_own_tests(path):
        try:  # real launches from the module's own tests before guessed ones
            inputs = dataclasses.replace(inputs, launches=str(launches_folder(path, cache_root())))
        except UsageError:
            pass
    return str(inspect_task(path.resolve(), cache_root(), inputs).reference_path)
