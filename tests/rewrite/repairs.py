"""Checks shared by the repairs' tests (constexpr-block-size, elementwise-max, pointer-subscript): their
originals run nowhere (they do not compile, and the interpreter rejects them too), so a rewritten module
is checked against PyTorch on the interpreter, and both versions are compiled offline for cuda:sm90."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.rewrite.conftest import check_options

# A task whose `Model` is PyTorch and whose `ModelNew` calls the module under test (`{style}_ops.py`).
TASK = """import torch
import torch.nn as nn

from {style}_ops import *  # noqa: F403


class Model(nn.Module):
    def forward(self, *args):
        return {reference}


class ModelNew(nn.Module):
    def forward(self, *args):
        return {candidate}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
"""


def verdict_against_pytorch(folder: Path, work: Path, style: str, version: str, spec: tuple[str, str, str]):
    """The harness's verdict on `{version}_{style}.py` of `folder` against PyTorch; `spec` is (the
    reference expression, the module's call, the inputs), each over `args`."""
    from diagnose.task import load_task
    from diagnose.verify.harness import verify

    shutil.copy(folder / f"{version}_{style}.py", work / f"{style}_ops.py")
    reference, candidate, inputs = spec
    task_file = work / "task.py"
    task_file.write_text(TASK.format(style=style, reference=reference, candidate=candidate, inputs=inputs))
    return verify(load_task(task_file), check_options(task_file))


def sm90_errors(folder: Path, work: Path, cli, style: str) -> dict[str, list[str]]:
    """Per version (`before`, `after`), the compile errors `diagnose inspect --target cuda:sm90` reports
    for the style's kernels at the fixture's call (`calls.json`; a task file needs none)."""
    calls = json.loads((folder / "calls.json").read_text())
    errors = {}
    for version in ("before", "after"):
        name = f"{version}.py" if style == "task" else f"{version}_{style}.py"
        target = work / version / (f"{style}_ops.py" if style != "task" else "task.py")
        target.parent.mkdir()
        shutil.copy(folder / name, target)
        done = cli(
            "inspect",
            str(target),
            "--json",
            "--target",
            "cuda:sm90",
            *(["--call", calls[style]] if style != "task" else []),
            env={"DIAGNOSE_CACHE_DIR": str(work / "cache")},
        )
        assert done.stdout.startswith("{"), done.stderr[-2000:]  # a kernel that fails to compile exits 1
        errors[version] = [str(k.get("error")) for k in json.loads(done.stdout)["kernels"] if k.get("error")]
        assert (done.returncode == 0) == (not errors[version]), done.stderr[-2000:]
    return errors


def assert_only_the_repaired_module_runs(folder: Path, work: Path, style: str, version: str, spec, error: str):
    """The `after` module matches PyTorch on the interpreter; the `before` one fails there with `error`."""
    verdict = verdict_against_pytorch(folder, work, style, version, spec)
    if version == "after":
        assert verdict.passed, verdict.failure or verdict.cases
    else:
        assert not verdict.passed and error in verdict.failure.message, verdict.failure


def assert_only_the_repaired_module_compiles(folder: Path, work: Path, cli, style: str, error: str):
    """Offline for cuda:sm90, every kernel of `before` fails with `error` and every one of `after` compiles."""
    errors = sm90_errors(folder, work, cli, style)
    assert errors["before"] and all(error in e for e in errors["before"]), errors["before"]
    assert errors["after"] == []
