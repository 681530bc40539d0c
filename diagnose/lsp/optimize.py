"""The `diagnose.optimize` command: the optimizing agent on the current task, from the editor.

It runs what `diagnose optimize PATH` runs (`diagnose.agent.run.optimize`: triage, profile, IR and
pass levels as the policy escalates, rewrites verified and timed where a device is configured) on
the saved file, in a thread so the editor keeps its answers, with work-done progress naming each
step of the escalation as it happens. The editor's settings give the target, the device (`cpu` by
default: verified on the interpreter, ranked by the static estimate) and `maxCandidates`.

At the end a `window/showMessage` gives the outcome and the run id (`diagnose report RUN_ID`
re-renders it). When a candidate passed and the document still reads as the file the run started
from, the best candidate comes back as one `workspace/applyEdit` (undoable like any edit); edits
made meanwhile are never overwritten. The optimized file and its diff are also kept in
`<cache>/runs/editor/`, never beside the user's file.

The command can be cancelled (`$/cancelRequest`, the progress's cancel button, `shutdown`; see
`jobs.py`): it is answered with RequestCancelled at once, and the agent's thread stops before its
next step (a node, or a candidate's verification); the log says when it has stopped.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types

from diagnose.agent.state import Budget
from diagnose.errors import DiagnoseError
from diagnose.lsp.jobs import Cancelled, Job
from diagnose.lsp.server import DiagnoseServer, document_path
from diagnose.lsp.settings import Settings
from diagnose.records import Report
from diagnose.report.run_view import outcome

COMMAND = "diagnose.optimize"
TICK_S = 1.0


@dataclass(frozen=True)
class Outcome:
    """What the command answers: whether a candidate passed (None: the run could not start), why,
    the run id and whether the best candidate was applied to the document."""

    passed: bool | None
    summary: str
    run_id: str | None = None
    applied: bool = False

    def to_json(self) -> dict:
        return {"passed": self.passed, "summary": self.summary, "run_id": self.run_id, "applied": self.applied}


def run_agent(path: str, settings: Settings, steps: list[str], checkpoint: Callable[..., None] = lambda *_: None):
    """Blocking: the agent on `path`; each trace step's text is appended to `steps` as it happens.

    `checkpoint` is called as each node starts and ends and as each candidate's verification starts;
    what it raises (`Cancelled`) stops the run there.
    """
    from diagnose.agent.run import optimize, runs_root  # deferred: imports langgraph (the agent)

    def on_step(node: str, values: dict) -> None:
        steps.extend(f"[{s['level']}] {s['action']}" for s in values.get("trace", []))
        checkpoint()

    return optimize(
        path,
        target=settings.target,
        device=settings.device,
        budget=Budget(max_candidates=settings.max_candidates),
        on_step=on_step,
        on_start=checkpoint,
        on_candidate=checkpoint,
        out_dir=runs_root() / "editor",
    )


def summarize(name: str, report: Report, run_id: str) -> str:
    """One line for the message window: the outcome, the deepest level, the run to re-render."""
    level = report.deepest_level or "baseline"
    return f"diagnose optimize {name} on {report.device}: {outcome(report)} Deepest level: {level}. Run {run_id}."


def progress_token() -> str:
    return f"diagnose-optimize-{uuid.uuid4().hex[:12]}"


def progress_message(start: float, steps: list[str]) -> str:
    latest = steps[-1] if steps else "verifying the task as given"
    return f"{latest} ({time.monotonic() - start:.0f} s)"


def task_name(path: str) -> str:
    return Path(path).name


async def optimize(ls: DiagnoseServer, uri: str) -> dict:
    """`diagnose.optimize URI`: the agent on the saved file, with progress, the outcome and the edit.

    One run per file at a time.
    """
    path = document_path(uri)
    if path is None or not Path(path).is_file():
        return _tell(ls, Outcome(None, f"diagnose.optimize: {uri} is not a saved file"), types.MessageType.Error)
    if path in ls.checks_running:
        return _tell(
            ls, Outcome(None, f"diagnose.optimize: already running on {task_name(path)}"), types.MessageType.Info
        )
    doc = ls.open_document(uri)
    if doc is not None and _unsaved(doc.source, path):
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Warning,
                message=f"{task_name(path)} has unsaved changes: optimizing the saved file",
            )
        )
    ls.checks_running.add(path)
    job = ls.jobs.start(ls.protocol.msg_id, f"diagnose optimize {task_name(path)}")
    try:
        return await _run(ls, uri, path, ls.settings_for(uri), job)
    finally:
        ls.jobs.finish(job)
        ls.checks_running.discard(path)


def progress_cancelled(ls: DiagnoseServer, params: types.WorkDoneProgressCancelParams) -> None:
    """The editor's cancel button on the progress: cancel the request it belongs to."""
    job = ls.jobs.by_progress(params.token)
    if job is not None:
        ls.protocol.cancel_request(job.request_id, "cancelled from the progress")


async def _run(ls: DiagnoseServer, uri: str, path: str, settings: Settings, job: Job) -> dict:
    progress = job.progress = await _begin_progress(ls, job.title)
    start, steps = time.monotonic(), []
    original = Path(path).read_text(encoding="utf-8", errors="replace")
    work = ls.run_blocking(run_agent, path, settings, steps, job.checkpoint)
    try:
        while not work.done():
            await asyncio.wait([work], timeout=TICK_S)
            if progress and not work.done():
                ls.work_done_progress.report(
                    progress, types.WorkDoneProgressReport(message=progress_message(start, steps))
                )
    except asyncio.CancelledError:
        # Answered already (RequestCancelled); the thread stops at its next step: say when it has.
        work.add_done_callback(lambda done: _stopped(ls, job, done, steps))
        raise
    try:
        result = work.result()
        passed = result.report.best is not None
        outcome = Outcome(passed, summarize(task_name(path), result.report, result.run_id), result.run_id)
        # A task file's optimized copy, or a kernel module's patched text (its patch stays in the runs folder).
        new_text = result.optimized.read_text() if result.optimized is not None else result.module_source
        if new_text is not None:
            outcome = await _apply(ls, uri, original, new_text, outcome)
        level = types.MessageType.Info if passed else types.MessageType.Warning
    except DiagnoseError as err:
        outcome, level = Outcome(None, f"diagnose optimize {task_name(path)}: {err}"), types.MessageType.Error
    except Exception as err:  # noqa: BLE001 - an internal error still ends the progress and is shown
        outcome = Outcome(None, f"diagnose optimize {task_name(path)}: internal error: {type(err).__name__}: {err}")
        level = types.MessageType.Error
    if progress:
        ls.work_done_progress.end(progress, types.WorkDoneProgressEnd(message=outcome.summary))
    return _tell(ls, outcome, level)


async def _apply(ls: DiagnoseServer, uri: str, original: str, optimized: str, outcome: Outcome) -> Outcome:
    """The best candidate as one whole-document edit, if the document still reads as the run's input."""
    doc = ls.open_document(uri)
    current = doc.source if doc is not None else original
    if current != original:
        return Outcome(
            outcome.passed, outcome.summary + " The document changed meanwhile: no edit applied.", outcome.run_id
        )
    if not ls.supports("workspace.apply_edit"):
        return outcome
    lines = original.splitlines(keepends=True)
    end = types.Position(line=len(lines), character=0)
    edit = types.WorkspaceEdit(
        changes={uri: [types.TextEdit(range=types.Range(types.Position(0, 0), end), new_text=optimized)]}
    )
    try:
        answer = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label="diagnose optimize: best verified candidate")
        )
    except Exception as err:  # noqa: BLE001 - a client that refuses still gets the outcome
        ls.log(f"workspace/applyEdit failed: {err}", types.MessageType.Warning)
        return outcome
    applied = bool(answer and answer.applied)
    note = " Applied to the document." if applied else " The editor did not apply the edit."
    return Outcome(outcome.passed, outcome.summary + note, outcome.run_id, applied)


async def _begin_progress(ls: DiagnoseServer, title: str) -> str | None:
    """A work-done progress token, when the client shows progress."""
    if not ls.supports("window.work_done_progress"):
        return None
    token = progress_token()
    try:
        await ls.work_done_progress.create_async(token)
    except Exception as err:  # noqa: BLE001 - no progress bar is no reason not to run
        ls.log(f"work done progress refused: {err}", types.MessageType.Warning)
        return None
    ls.work_done_progress.begin(
        token, types.WorkDoneProgressBegin(title=title, message="loading the task", cancellable=True)
    )
    return token


def _stopped(ls: DiagnoseServer, job: Job, work: asyncio.Future, steps: list[str]) -> None:
    """The thread of a cancelled run has ended: log where it stopped (its result is dropped)."""
    error = work.exception()  # retrieved, so that asyncio does not report it as lost
    where = f" after {steps[-1]}" if steps else " before its first step"
    if isinstance(error, Cancelled):
        ls.log(f"{job.title}: stopped{where}")
    else:
        ls.log(f"{job.title}: ended{where} after the cancellation; its result is dropped")


def _tell(ls: DiagnoseServer, outcome: Outcome, level: types.MessageType) -> dict:
    ls.window_show_message(types.ShowMessageParams(type=level, message=outcome.summary))
    ls.log(outcome.summary, level)
    return outcome.to_json()


def _unsaved(text: str, path: str) -> bool:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace") != text
    except OSError:
        return False
