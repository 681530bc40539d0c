"""`diagnose decompose MODEL.py`: cut, verify each subgraph's candidates, choose, compose, verify the
composite end to end, report.

The output folder is `--out` or `MODEL.decompose/` beside the model. A folder that exists must be
empty or one this command made (it holds `MARKER`): user files are never overwritten. A folder
made for a model that then fails to build, run or trace is removed.

Search (`search.py`): where times were measured, neighbouring subgraphs are fused where a fused
candidate verifies and is faster than the two it replaces, within `--fuse-budget` fused candidates;
then a subgraph whose kernels failed or trailed is cut after its anchor where its epilogue alone then
chooses a Triton kernel.

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
from diagnose.decompose.choose import Choice, Prefer, choose
from diagnose.decompose.jobs import capture, write_subtasks
from diagnose.decompose.partition import Subgraph
from diagnose.decompose.report import DecomposeReport, EndToEnd, SubgraphReport, markdown
from diagnose.decompose.search import search, split_swapped
from diagnose.decompose.subtask import describe
from diagnose.errors import EXIT_FAILED, EXIT_OK, DiagnoseError, UsageError
from diagnose.outputs import check_folder
from diagnose.scoring import geomean
from diagnose.task import load_task_file, parse_file
from diagnose.task.kernelbench import REFERENCE_NAMES, top_level_names
from diagnose.verify.harness import CheckOptions, verify
from diagnose.verify.options import placement_for

MARKER = ".diagnose-decompose"
# Fused pairs of neighbouring subgraphs tried, each a verification and a timing (`search.py`).
FUSE_BUDGET = 4


def output_folder(folder: Path) -> Path:
    """Where the subtasks go, made and checked before any worker runs."""
    if folder.exists() and folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).exists():
        raise UsageError(f"{folder}: exists and was not made by `diagnose decompose`; give another --out")
    check_folder(folder, "--out", create=True)
    (folder / MARKER).write_text("made by diagnose decompose; its files are rewritten on each run\n")
    return folder.resolve()


def decompose(
    model: Path,
    kernels: Path | None,
    options: CheckOptions,
    out: Path | None = None,
    prefer: Prefer = "torch",
    with_inductor: bool = True,
    fuse_budget: int = FUSE_BUDGET,
) -> DecomposeReport:
    """The whole command's work; the report it renders. `with_inductor`: each subgraph also gets the
    candidate Inductor generates for it (`inductor.py`). `fuse_budget`: fused pairs of neighbours tried
    (`search.py`; only where times were measured)."""
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
    per_subgraph = replace(options, baselines=tuple(b for b in options.baselines if b == "eager"))

    def rows_for(subgraphs: list[Subgraph], files: list[Path | None]) -> list[SubgraphReport]:
        made_here = [f for f in files if f is not None]
        extracted = inductor.extract(tuple(made_here), options.device, options.timeout_s) if with_inductor else {}
        rows = []
        for sg, task_file in zip(subgraphs, files):
            if task_file is None:
                rows.append(SubgraphReport(sg.name, describe(sg, records), "", "", (), Choice("torch", "no task file")))
                continue
            tried_here = candidates(task_file, kernel_for(sg.name, kernels), per_subgraph, extracted.get(task_file))
            rows.append(
                SubgraphReport(
                    sg.name,
                    describe(sg, records),
                    ", ".join(compose.shape_of(records[i]) for i in sg.inputs),
                    compose.shape_of(records[sg.output]),
                    tried_here,
                    choose(tried_here, prefer),
                )
            )
        return rows

    subgraphs, rows = list(found.subgraphs), rows_for(list(found.subgraphs), list(found.files))

    def evaluate(made: list[Subgraph]) -> list[SubgraphReport]:
        return rows_for(made, write_subtasks(found, made, folder, options.timeout_s))

    # nothing is timed on the CPU: no pair can win there
    budget = fuse_budget if options.device != "cpu" else 0
    subgraphs, rows, fusions = search(subgraphs, rows, found.records, evaluate, budget)
    subgraphs, rows, splits = split_swapped(subgraphs, rows, found.records, evaluate)
    found = replace(found, subgraphs=tuple(subgraphs), files=tuple(folder / f"{sg.name}.py" for sg in subgraphs))
    chosen = {row.name: row.choice.name for row in rows}
    tried = {sg.name: k for sg in subgraphs if (k := kernel_for(sg.name, kernels)) is not None}
    composite = compose.write(found, folder, chosen, tried, {row.name: row.choice.why for row in rows})
    names = {sg.name for sg in subgraphs}
    unused = tuple(sorted(p.name for p in kernels.glob("*.py") if p.stem not in names)) if kernels else ()
    report = DecomposeReport(
        model,
        folder,
        composite,
        tuple(rows),
        end_to_end(model, composite, chosen, options),
        unused,
        tuple(fusions),
        tuple(splits),
    )
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


def decompose_command(
    model: Path,
    kernels: Path | None,
    options: CheckOptions,
    out: Path | None,
    prefer: Prefer,
    with_inductor: bool = True,
    fuse_budget: int = FUSE_BUDGET,
) -> tuple[int, str]:
    """Exit code (1 when the composite fails end to end) and the Markdown report."""
    report = decompose(model, kernels, options, out, prefer, with_inductor, fuse_budget)
    return (EXIT_FAILED if report.end_to_end.passed is False else EXIT_OK), markdown(report)
