"""`diagnose decompose MODEL.py`: cut, verify each subgraph's candidates, choose, compose, verify the
composite end to end, report.

The output folder is `--out` or `MODEL.decompose/` beside the model. A folder that exists must be
empty or one this command made (it holds `MARKER`): user files are never overwritten. A folder
made for a model that then fails to build, run or trace is removed.

Timing: a subgraph's candidates are timed against eager only (its torch candidate: the choice is between
them), the composite against every baseline the options name (eager and `torch.compile`): compiling each
subgraph as a baseline too would double a device sweep's time and choose nothing.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from diagnose.decompose import compose, inductor
from diagnose.decompose.candidates import candidates, kernel_for, why
from diagnose.decompose.choose import Prefer, choose
from diagnose.decompose.jobs import capture
from diagnose.decompose.report import DecomposeReport, EndToEnd, SubgraphReport, markdown
from diagnose.decompose.subtask import describe
from diagnose.errors import EXIT_FAILED, EXIT_OK, DiagnoseError, UsageError
from diagnose.outputs import check_folder
from diagnose.scoring import geomean
from diagnose.task import load_task_file, parse_file
from diagnose.task.kernelbench import REFERENCE_NAMES, top_level_names
from diagnose.verify.harness import CheckOptions, verify
from diagnose.verify.options import placement_for

MARKER = ".diagnose-decompose"


def output_folder(folder: Path) -> Path:
    """Where the subtasks go, made and checked before any worker runs."""
    if folder.exists() and folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).exists():
        raise UsageError(f"{folder}: exists and was not made by `diagnose decompose`; give another --out")
    check_folder(folder, "--out", create=True)
    (folder / MARKER).write_text("made by diagnose decompose; its files are rewritten on each run\n")
    return folder.resolve()


def decompose(model: Path, kernels: Path | None, options: CheckOptions, out: Path | None = None,
              prefer: Prefer = "torch", with_inductor: bool = True) -> DecomposeReport:
    """The whole command's work; the report it renders. `with_inductor`: each subgraph also gets the
    candidate Inductor generates for it (`inductor.py`)."""
    model = model.resolve() if model.exists() else model
    missing = [n for n in REFERENCE_NAMES if n not in top_level_names(parse_file(model))]
    if missing:
        raise UsageError(f"{model}: the model file has no {', '.join(missing)} (it needs {', '.join(REFERENCE_NAMES)})")
    if kernels is not None and not kernels.is_dir():
        raise UsageError(f"--kernels {kernels}: not a folder")
    placement_for(options)  # the device runs here, before any worker or folder
    target = out if out is not None else model.with_suffix(".decompose")
    made = not target.exists()
    folder = output_folder(target)
    try:
        found = capture(model, folder, options.timeout_s)
    except DiagnoseError:
        if made:  # a model that does not run leaves nothing behind
            shutil.rmtree(folder, ignore_errors=True)
        raise
    records = {r.name: r for r in found.records}
    extracted = inductor.extract(found.files, options.device, options.timeout_s) if with_inductor else {}
    rows, chosen, tried, notes = [], {}, {}, {}
    per_subgraph = replace(options, baselines=tuple(b for b in options.baselines if b == "eager"))
    for sg, task_file in zip(found.subgraphs, found.files):
        kernel = kernel_for(sg.name, kernels)
        tried_here = candidates(task_file, kernel, per_subgraph, extracted.get(task_file))
        choice = choose(tried_here, prefer)
        chosen[sg.name] = choice.name
        notes[sg.name] = choice.why
        if kernel is not None:
            tried[sg.name] = kernel
        rows.append(SubgraphReport(sg.name, describe(sg, records),
                                   ", ".join(compose.shape_of(records[i]) for i in sg.inputs),
                                   compose.shape_of(records[sg.output]), tried_here, choice))
    composite = compose.write(found, folder, chosen, tried, notes)
    names = {sg.name for sg in found.subgraphs}
    unused = tuple(sorted(p.name for p in kernels.glob("*.py") if p.stem not in names)) if kernels else ()
    report = DecomposeReport(model, folder, composite, tuple(rows), end_to_end(model, composite, chosen, options),
                             unused)
    (folder / "report.md").write_text(markdown(report))
    return report


def end_to_end(model: Path, composite: Path, chosen: dict[str, str], options: CheckOptions) -> EndToEnd:
    """The composite verified against the whole `Model` with the harness; only when it runs Triton."""
    if all(c == "torch" for c in chosen.values()):
        return EndToEnd(None, "every subgraph chose torch: the composite launches no Triton kernel")
    verdict = verify(load_task_file(model, composite), options)
    # the geometric mean over input groups: groups of different sizes weigh alike
    means = {over: geomean(verdict.speedups(over).values()) for over in options.baselines}
    return EndToEnd(verdict.passed, why(verdict), tuple((over, x) for over, x in means.items() if x is not None))


def decompose_command(model: Path, kernels: Path | None, options: CheckOptions, out: Path | None,
                      prefer: Prefer, with_inductor: bool = True) -> tuple[int, str]:
    """Exit code (1 when the composite fails end to end) and the Markdown report."""
    report = decompose(model, kernels, options, out, prefer, with_inductor)
    return (EXIT_FAILED if report.end_to_end.passed is False else EXIT_OK), markdown(report)
