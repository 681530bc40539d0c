"""Suite formats: which adapter turns a suite checkout into tasks for the harness.

`diagnose bench FORMAT PATH` picks the adapter by name; `diagnose bench PATH` (no format) is the
`npukernel` folder format of `diagnose/bench/suite.py`, as before. Each adapter module documents its
format in its docstring and offers:

- `MODES`: the sweep modes it supports;
- `load(root, options) -> list[SuiteTask]`: the tasks, listed by reading files only;
- `score(task, options) -> list[(group, status, data)]`: the store rows of one task, user code run only
  in worker subprocesses with timeouts;
- `optimize_task(task, options, folder, agent) -> rows`, where `MODES` has "optimize": what the agent
  runs on for one task, handed to `agent(path) -> rows` (the sweep's one agent path,
  `diagnose/bench/sweep.py`), any file it needs written into `folder` (the entry's runs folder, never
  the suite's); a task the agent cannot run on is its failed or unsupported row, with the reason.

Results go to the same store and report as every sweep, under the suite name `FORMAT:FOLDER`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from diagnose.errors import UsageError


@dataclass(frozen=True)
class Format:
    """A suite format: its name, the adapter module and a one-line description."""

    name: str
    module: str | None
    summary: str


DEFAULT = "npukernel"
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("npukernel", None, "NPUKernelBench-style folder of task files (Model, get_inputs, ModelNew) [default]"),
        Format(
            "kernelbench",
            "diagnose.bench.suites.kernelbench",
            "KernelBench level folders + a folder of ModelNew solutions",
        ),
        Format(
            "multikernelbench",
            "diagnose.bench.suites.multikernelbench",
            "reference with get_input_groups() + a JSON-lines file of input cases",
        ),
        Format(
            "tritonbench",
            "diagnose.bench.suites.tritonbench",
            "TritonBench-G/T files: code, a # line, test_* functions",
        ),
        Format("kernelgen", "diagnose.bench.suites.kernelgen", "KernelGenBench-style operator specs (shapes x dtypes)"),
        Format("prtask", "diagnose.bench.suites.prtask", "PR-derived tasks judged by a host project's own tests"),
        Format(
            "datakernel",
            "diagnose.bench.suites.datakernel",
            "DataKernelBench: TPC-H TorchPlans (core/full) + Triton kernels",
        ),
    )
}


def adapter(name: str) -> ModuleType:
    """The adapter module of a format (not for `npukernel`, which the sweep handles itself)."""
    found = FORMATS.get(name)
    if found is None:
        raise UsageError(f"unknown suite format {name!r}; formats: {', '.join(FORMATS)}")
    if found.module is None:
        raise UsageError(f"{name} is the default folder format: it has no adapter module")
    return importlib.import_module(found.module)
