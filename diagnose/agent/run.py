"""One `diagnose optimize` run: its folder, its durable checkpoints, resuming, and the files it leaves.

A run lives in `<cache>/runs/<run id>/` (cache: `DIAGNOSE_CACHE_DIR` or `.diagnose_cache/`): the SQLite
checkpoints (LangGraph's `SqliteSaver`, written synchronously after every node, so a run killed at any
node resumes from the last one that finished), the candidate files, and the report (`report.json`, the
source of truth, plus the roofline plot and the Markdown and HTML renderings: `diagnose/report/run_files.py`).
The optimized task goes next to the input as `<name>.optimized.py` with its diff beside it (or into
`out_dir`, as benchmark sweeps ask) — never over the input unless `write=True`, and never over an existing
file (a run-specific name is used instead).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from diagnose.agent import policy
from diagnose.agent.graph import build_graph
from diagnose.agent.state import LEVELS, Budget, Context
from diagnose.agent.tools import Tools
from diagnose.errors import UsageError
from diagnose.report.reports import environment
from diagnose.records import SCHEMA_VERSION


@dataclass(frozen=True)
class RunResult:
    run_id: str
    run_dir: Path
    report: dict
    optimized: Path | None
    diff: Path | None


def runs_root() -> Path:
    return Path(os.environ.get("DIAGNOSE_CACHE_DIR") or ".diagnose_cache") / "runs"


def run_dir(run_id: str) -> Path:
    return runs_root() / run_id


def open_graph(folder: Path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    connection = sqlite3.connect(folder / "checkpoints.sqlite", check_same_thread=False)
    return build_graph(SqliteSaver(connection)), connection


def optimize(task: str, target: str = "cuda:sm90", device: str = "cpu", budget: Budget = Budget(),
             resume: str | None = None, write: bool = False, tools: Tools | None = None,
             on_step: Callable[[str, dict], None] | None = None, out_dir: str | Path | None = None,
             on_start: Callable[[str], None] | None = None,
             on_candidate: Callable[[str, int, int], None] | None = None,
             device_lock: str | None = None) -> RunResult:
    """Run (or resume) the agent on a task and write its outputs; a resumed run keeps its own budget.

    Progress hooks, all optional: `on_start(node)` as a node starts, `on_step(node, values)` with the state
    update a node returned, `on_candidate(id, index, total)` as a candidate's verification starts (through
    the default `Tools`; a caller's own `tools` report nothing). `device_lock`: the lock file of a device
    shared with other runs (the default `Tools` pass it to every job; `diagnose.runtime.device_lock`).
    """
    if resume:
        folder = run_dir(resume)
        if not (folder / "checkpoints.sqlite").exists():
            raise UsageError(f"no run {resume!r} in {runs_root()}")
        run_id = resume
        meta = json.loads((folder / "run.json").read_text())
        task, target, device, write = meta["task"], meta["target"], meta["device"], meta["write"]
        out_dir = meta.get("out_dir")
        # A resumed run keeps the budget it started with: the same run, the same limits.
        budget = Budget(**meta["budget"]) if meta.get("budget") else budget
    else:
        from diagnose.runtime.devices import require
        from diagnose.task import load_task

        load_task(task)  # bad input fails here, in one line, before a run exists
        require(device)  # and so does a device that is not here
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        folder = run_dir(run_id)
        folder.mkdir(parents=True)
        task = str(Path(task).resolve())
        out_dir = str(Path(out_dir).resolve()) if out_dir else None
        (folder / "run.json").write_text(json.dumps({"task": task, "target": target, "device": device, "write": write,
                                                     "out_dir": out_dir, "budget": dataclasses.asdict(budget)}))
    graph, connection = open_graph(folder)
    config = {"configurable": {"thread_id": run_id}}
    # A caller's own `tools` are theirs to close; the run closes (deletes the kept reference of) its own.
    own = None if tools else Tools(str(folder), on_candidate=on_candidate, device_lock=device_lock,
                                   seeds=budget.seeds, compile_baseline=budget.compile_baseline)
    context = Context(run_dir=str(folder), budget=budget, tools=tools or own)
    first = None if resume else {"task": task, "target": target, "device": device, "started": time.time()}
    try:
        for mode, chunk in graph.stream(first, config, context=context, stream_mode=["updates", "tasks"],
                                        durability="sync"):
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
    from diagnose.report.run_files import write_report_files

    write_report_files(report, folder)
    optimized, diff = write_outputs(state, write, run_id, out_dir)
    return RunResult(run_id, folder, report, optimized, diff)


def report_from_state(state: dict) -> dict:
    """The run's report, in the schema of `diagnose/report/report.schema.json`."""
    results = state.get("results", [])
    best = policy.best_result(results)
    return {
        "schema_version": SCHEMA_VERSION,
        "task": state["task"],
        "target": state["target"],
        "device": state["device"],
        "findings": state.get("findings", []),
        "trace": state.get("trace", []),
        "candidates": [{"candidate": r["candidate"], "verdict": r["verdict"]} for r in results],
        "best": best["candidate"]["id"] if best else None,
        "environment": [list(pair) for pair in environment()],
        "baseline": state.get("baseline"),
        "evidence": state.get("evidence", []),
        "roofline": state.get("roofline") or None,
        "deepest_level": LEVELS[state["level"]] if state.get("level", -1) >= 0 else None,
        # From the run's start to its report (a resumed run counts the time it lay stopped too).
        "wall_s": round(time.time() - state["started"], 1) if state.get("started") else None,
    }


def free_name(path: Path, run_id: str) -> Path:
    return path if not path.exists() else path.with_name(f"{path.stem}-{run_id}{path.suffix}")


def write_outputs(state: dict, write: bool, run_id: str,
                  out_dir: str | Path | None = None) -> tuple[Path | None, Path | None]:
    best = policy.best_result(state.get("results", []))
    if best is None:
        return None, None
    original = Path(state["task"])
    new_source = Path(best["path"]).read_text()
    old_source = original.read_text()
    diff_text = "".join(difflib.unified_diff(old_source.splitlines(True), new_source.splitlines(True),
                                             str(original.name), f"{original.stem}.optimized.py"))
    folder = Path(out_dir) if out_dir else original.parent
    folder.mkdir(parents=True, exist_ok=True)
    target = original if write else free_name(folder / f"{original.stem}.optimized.py", run_id)
    target.write_text(new_source)
    diff = free_name(folder / f"{original.stem}.optimized.diff", run_id)
    diff.write_text(diff_text)
    return target, diff
