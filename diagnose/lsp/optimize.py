"""The `diagnose.optimize` command: what the editor runs on the current task.

`diagnose optimize` (the agent) does not exist yet, so today the command runs what `diagnose check`
runs: the verification harness on the task's `ModelNew` (correctness, anti-cheat, and timing where a
device is configured), in a thread so the editor keeps its answers, with work-done progress while it
runs and the verdict in a `window/showMessage`. The command name stays when it switches to the agent;
the agent's best candidate will then come back through `workspace/applyEdit`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types

from diagnose.errors import DiagnoseError
from diagnose.lsp.server import DiagnoseServer, document_path
from diagnose.records import Verdict

COMMAND = "diagnose.optimize"
TICK_S = 1.0


@dataclass(frozen=True)
class Outcome:
    """What the command answers: whether the task passed (None: it could not run) and why."""

    passed: bool | None
    summary: str

    def to_json(self) -> dict:
        return {"passed": self.passed, "summary": self.summary}


def check_task(path: str, device: str) -> Verdict:
    """Blocking: load the task and verify it as `diagnose check PATH --device DEVICE` does."""
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, verify

    return verify(load_task(path), CheckOptions(device=device))


def summarize(name: str, verdict: Verdict) -> str:
    """One line for the message window: the verdict, then what failed or what was measured."""
    head = f"diagnose check {name} on {verdict.device}: {'PASSED' if verdict.passed else 'FAILED'}"
    if verdict.failure is not None:
        return f"{head}: {verdict.failure.kind}: {verdict.failure.message}"
    cases = f"{sum(c.passed for c in verdict.cases)}/{len(verdict.cases)} cases correct"
    failed = [c.name for c in verdict.checks if not c.passed]
    checks = f"failed checks: {', '.join(failed)}" if failed else f"{len(verdict.checks)} anti-cheat checks passed"
    speedups = verdict.speedups("eager")
    timing = (", ".join(f"{g} {s:.2f}x vs eager" for g, s in speedups.items()) if speedups
              else "not timed (no device)")
    return f"{head}: {cases}; {checks}; {timing}"


def progress_token() -> str:
    return f"diagnose-optimize-{uuid.uuid4().hex[:12]}"


def elapsed_message(start: float) -> str:
    return f"verifying (reference, candidate, anti-cheat): {time.monotonic() - start:.0f} s"


def task_name(path: str) -> str:
    return Path(path).name


async def optimize(ls: DiagnoseServer, uri: str) -> dict:
    """`diagnose.optimize URI`: verify the task in the saved file, with progress and the verdict shown.

    Today this runs `diagnose check` (the harness, `CheckOptions(device=...)` from the `device`
    option, `cpu` by default); it will run the optimizing agent once `diagnose optimize` exists,
    under the same command name. One run per file at a time.
    """
    path = document_path(uri)
    if path is None or not Path(path).is_file():
        return _tell(ls, Outcome(None, f"diagnose.optimize: {uri} is not a saved file"), types.MessageType.Error)
    if path in ls.checks_running:
        return _tell(ls, Outcome(None, f"diagnose.optimize: already running on {task_name(path)}"),
                     types.MessageType.Info)
    doc = ls.open_document(uri)
    if doc is not None and _unsaved(doc.source, path):
        ls.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Warning, message=f"{task_name(path)} has unsaved changes: checking the saved file"))
    device = ls.settings_for(uri).device
    ls.checks_running.add(path)
    try:
        return await _run_check(ls, path, device)
    finally:
        ls.checks_running.discard(path)


async def _run_check(ls: DiagnoseServer, path: str, device: str) -> dict:
    progress = await _begin_progress(ls, f"diagnose check {task_name(path)}")
    start = time.monotonic()
    job = ls.run_blocking(check_task, path, device)
    while not job.done():
        await asyncio.wait([job], timeout=TICK_S)
        if progress and not job.done():
            ls.work_done_progress.report(progress, types.WorkDoneProgressReport(message=elapsed_message(start)))
    try:
        outcome = Outcome(job.result().passed, summarize(task_name(path), job.result()))
        level = types.MessageType.Info if outcome.passed else types.MessageType.Warning
    except DiagnoseError as err:
        outcome, level = Outcome(None, f"diagnose check {task_name(path)}: {err}"), types.MessageType.Error
    except Exception as err:  # noqa: BLE001 - an internal error still ends the progress and is shown
        outcome = Outcome(None, f"diagnose check {task_name(path)}: internal error: {type(err).__name__}: {err}")
        level = types.MessageType.Error
    if progress:
        ls.work_done_progress.end(progress, types.WorkDoneProgressEnd(message=outcome.summary))
    return _tell(ls, outcome, level)


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
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
        title=title, message="loading the task", cancellable=False))
    return token


def _tell(ls: DiagnoseServer, outcome: Outcome, level: types.MessageType) -> dict:
    ls.window_show_message(types.ShowMessageParams(type=level, message=outcome.summary))
    ls.log(outcome.summary, level)
    return outcome.to_json()


def _unsaved(text: str, path: str) -> bool:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace") != text
    except OSError:
        return False
