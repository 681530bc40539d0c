"""One `diagnose optimize` run: its folder, its durable checkpoints, resuming, and the files it leaves.

A run lives in `<cache>/runs/<run id>/` (cache: `DIAGNOSE_CACHE_DIR` or the user cache, `diagnose.knobs`;
a run of an older version may lie in `./.diagnose_cache/runs/`, where `find_run` looks too): the SQLite
checkpoints (LangGraph's `SqliteSaver`, written synchronously after every node, so a run killed at any
node resumes from the last one that finished), the candidate files, and the report (`report.json`, the
source of truth, plus the roofline plot and the Markdown and HTML renderings: `diagnose/report/run_files.py`).
The optimized task goes next to the input as `<name>.optimized.py` with its diff beside it (or into
`out_dir`, as benchmark sweeps ask) — never over the input unless `write=True`, and never over an existing
file (a run-specific name is used instead); a folder that cannot take them fails before the run starts.

A task whose own code raises, crashes or hangs in the baseline's verification ends the run there
(`policy.broken_task`): the report says so and the command line exits 2.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from langgraph.checkpoint.sqlite import SqliteSaver

from diagnose import knobs
from diagnose.agent import policy
from diagnose.agent.graph import build_graph
from diagnose.agent.state import LEVELS, Budget, Context
from diagnose.agent.tools import Tools
from diagnose.capture.prepare import task_path
from diagnose.errors import UsageError
from diagnose.outputs import check_file, check_folder
from diagnose.report.reports import environment
from diagnose.records import (
    Report,
    candidate_from_dict,
    evidence_from_dict,
    finding_from_dict,
    roofline_from_dict,
    trace_step_from_dict,
    verdict_from_dict,
)
from diagnose.report.run_files import write_report_files
from diagnose.task import load_task
from diagnose.task.harness import header
from diagnose.task.patch import apply_patch, write_patch
from diagnose.toolchain.placement import require


@dataclass(frozen=True)
class RunResult:
    """A finished run: its report, and what it handed back. For a task file, `optimized` is the optimized
    task and `diff` its diff; for a kernel module, `diff` is the patch beside the module, `optimized` the
    module itself once the patch was applied (`write`), and `module_source` the module's patched text."""

    run_id: str
    run_dir: Path
    report: Report
    optimized: Path | None
    diff: Path | None
    module_source: str | None = None


def runs_root() -> Path:
    """Where new runs go (`diagnose.knobs.runs_root`)."""
    return knobs.runs_root()


def run_dir(run_id: str) -> Path:
    """The folder of run `run_id`: where it lies (`find_run`), else where a new one goes."""
    return find_run(run_id) or runs_root() / run_id


def find_run(run_id: str) -> Path | None:
    """The folder of an existing run, in the runs root or an older version's (`knobs.run_roots`)."""
    if not run_id or Path(run_id).name != run_id:  # an id, never a path
        return None
    return next((root / run_id for root in knobs.run_roots() if (root / run_id).is_dir()), None)


def check_outputs(task: str | Path, write: bool, out_dir: str | Path | None) -> None:
    """The optimized task and its diff can be written (the input too, with `write`); else `UsageError`."""
    module = header(Path(task).read_text(errors="replace")) if Path(task).is_file() else None
    if module is not None:  # a kernel module's task: the patch goes beside the user's module
        task = module.origin
    if write:
        check_file(Path(task), "--write")
    if out_dir:
        check_folder(Path(out_dir), "the optimized task's folder", create=True)
    else:
        check_folder(
            Path(task).resolve().parent,
            f"{Path(task).stem}.diagnose.patch" if module else f"{Path(task).stem}.optimized.py",
        )
    check_folder(runs_root(), "the runs folder (--cache-dir)", create=True)


def open_graph(folder: Path):
    connection = sqlite3.connect(folder / "checkpoints.sqlite", check_same_thread=False)
    return build_graph(SqliteSaver(connection)), connection


def optimize(
    task: str,
    target: str = "cuda:sm90",
    device: str = "cpu",
    budget: Budget = Budget(),
    resume: str | None = None,
    write: bool = False,
    tools: Tools | None = None,
    on_step: Callable[[str, dict], None] | None = None,
    out_dir: str | Path | None = None,
    on_start: Callable[[str], None] | None = None,
    on_candidate: Callable[[str, int, int], None] | None = None,
    device_lock: str | None = None,
    on_run: Callable[[str], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> RunResult:
    """Run (or resume) the agent on a task and write its outputs; a resumed run keeps its own budget.

    Progress hooks, all optional: `on_run(run_id)` once the run exists (before its first node),
    `on_start(node)` as a node starts, `on_step(node, values)` with the state update a node returned,
    `on_candidate(id, index, total)` as a candidate's verification starts and `on_phase(name)` as each
    step of a verification starts (both through the default `Tools`; a caller's own `tools` report
    nothing). `device_lock`: the lock file of a device shared with other runs (the default `Tools` pass
    it to every job; `diagnose.runtime.device_lock`).
    """
    if resume:
        folder = find_run(resume)
        if folder is None or not (folder / "checkpoints.sqlite").exists():
            where = " nor ".join(str(root) for root in knobs.run_roots())
            raise UsageError(f"no run {resume!r} in {where}")
        run_id = resume
        meta = json.loads((folder / "run.json").read_text())
        task, target, device, write = meta["task"], meta["target"], meta["device"], meta["write"]
        out_dir = meta.get("out_dir")
        check_outputs(task, write, out_dir)
        # A resumed run keeps the budget it started with: the same run, the same limits.
        budget = Budget(**meta["budget"]) if meta.get("budget") else budget
    else:
        # A kernel module runs as its generated task file (its captured launches, else its own tests).
        task = task_path(task, device=device)
        load_task(task)  # bad input fails here, in one line, before a run exists
        require(device)  # and so does a device that is not here
        check_outputs(task, write, out_dir)  # and a folder the results cannot go to
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        folder = runs_root() / run_id
        folder.mkdir(parents=True)
        task = str(Path(task).resolve())
        out_dir = str(Path(out_dir).resolve()) if out_dir else None
        (folder / "run.json").write_text(
            json.dumps(
                {
                    "task": task,
                    "target": target,
                    "device": device,
                    "write": write,
                    "out_dir": out_dir,
                    "budget": dataclasses.asdict(budget),
                }
            )
        )
    if on_run:
        on_run(run_id)
    graph, connection = open_graph(folder)
    config = {"configurable": {"thread_id": run_id}}
    # A caller's own `tools` are theirs to close; the run closes (deletes the kept reference of) its own.
    own = (
        None
        if tools
        else Tools(
            str(folder),
            on_candidate=on_candidate,
            on_phase=on_phase,
            device_lock=device_lock,
            seeds=budget.seeds,
            compile_baseline=budget.compile_baseline,
        )
    )
    context = Context(run_dir=str(folder), budget=budget, tools=tools or own)
    first = None if resume else {"task": task, "target": target, "device": device, "started": time.time()}
    try:
        for mode, chunk in graph.stream(
            first, config, context=context, stream_mode=["updates", "tasks"], durability="sync"
        ):
            if mode == "tasks":
                if on_start and "input" in chunk:  # a task's start; its end carries "result"
                    on_start(chunk["name"])
                continue
            for node, values in chunk.items():
                if on_step:
                    on_step(node, values or {})
        state = graph.get_state(config).values
    finally:
        connection.close()
        if own is not None:
            own.close()
    report = report_from_state(state)
    write_report_files(report, folder)
    optimized, diff, module_source = write_outputs(state, write, run_id, out_dir)
    return RunResult(run_id, folder, report, optimized, diff, module_source)


def report_from_state(state: dict) -> Report:
    """The run's `Report`, from the state's JSON-ready dicts: the one place they become records."""
    results = state.get("results", [])
    best = policy.best_result(results)
    module = header(Path(state["task"]).read_text(errors="replace")) if Path(state["task"]).is_file() else None
    baseline = state.get("baseline")
    return Report(
        task=state["task"],
        target=state["target"],
        device=state["device"],
        findings=tuple(finding_from_dict(f) for f in state.get("findings", [])),
        trace=tuple(trace_step_from_dict(s) for s in state.get("trace", [])),
        candidates=tuple((candidate_from_dict(r["candidate"]), verdict_from_dict(r["verdict"])) for r in results),
        best=best["candidate"]["id"] if best else None,
        environment=environment(),
        module=str(module.origin) if module else None,
        baseline=verdict_from_dict(baseline) if baseline else None,
        evidence=tuple(evidence_from_dict(e) for e in state.get("evidence", [])),
        roofline=roofline_from_dict(state.get("roofline")),
        deepest_level=LEVELS[state["level"]] if state.get("level", -1) >= 0 else None,
        # From the run's start to its report (a resumed run counts the time it lay stopped too).
        wall_s=round(time.time() - state["started"], 1) if state.get("started") else None,
    )


def free_name(path: Path, run_id: str) -> Path:
    return path if not path.exists() else path.with_name(f"{path.stem}-{run_id}{path.suffix}")


def write_outputs(
    state: dict, write: bool, run_id: str, out_dir: str | Path | None = None
) -> tuple[Path | None, Path | None, str | None]:
    """The best candidate handed back: a task file as `NAME.optimized.py` with its diff; a kernel module
    as a patch against the user's own file (`diagnose/task/patch.py`), applied to it with `write`."""
    best = policy.best_result(state.get("results", []))
    if best is None:
        return None, None, None
    original = Path(state["task"])
    new_source = Path(best["path"]).read_text()
    old_source = original.read_text()
    module = header(old_source)
    if module is not None:
        patch = write_patch(module.origin, old_source, new_source, Path(out_dir) if out_dir else None)
        if patch is None:
            return None, None, None
        if write:
            apply_patch(patch)
            return module.origin, patch.path, patch.new_source
        return None, patch.path, patch.new_source
    diff_text = "".join(
        difflib.unified_diff(
            old_source.splitlines(True),
            new_source.splitlines(True),
            str(original.name),
            f"{original.stem}.optimized.py",
        )
    )
    folder = Path(out_dir) if out_dir else original.parent
    folder.mkdir(parents=True, exist_ok=True)
    target = original if write else free_name(folder / f"{original.stem}.optimized.py", run_id)
    target.write_text(new_source)
    diff = free_name(folder / f"{original.stem}.optimized.diff", run_id)
    diff.write_text(diff_text)
    return target, diff, None
