"""`diagnose.optimize`: the agent runs in the background with progress, an outcome message and the edit."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from tests.lsp.conftest import open_document, wait_until

pytestmark = pytest.mark.asyncio


@pytest.mark.slow
async def test_optimize_runs_the_agent_with_progress_and_applies_the_best_candidate(launch, examples):
    client = await launch(
        examples, capabilities=pytest_lsp.client_capabilities("visual-studio-code"), options={"maxCandidates": 1}
    )
    path, uri = examples.copy("vector_add.py")
    original = path.read_text()
    open_document(client, uri, original)
    command = asyncio.ensure_future(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="diagnose.optimize", arguments=[uri]))
    )
    await wait_until(lambda: client.progress_reports, what="progress to begin")
    # The agent runs off the event loop: a request sent meanwhile is answered at once.
    start = time.monotonic()
    await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0))
    )
    assert time.monotonic() - start < 1.0 and not command.done()
    result = await asyncio.wait_for(command, timeout=600)
    assert result["passed"] is True and result["run_id"] and result["applied"] is True, result
    (reports,) = client.progress_reports.values()
    assert reports[0].kind == "begin" and reports[-1].kind == "end"
    assert any("[triage]" in (r.message or "") for r in reports), "progress names the escalation's steps"
    shown = [m.message for m in client.messages]
    assert any(m.startswith("diagnose optimize vector_add.py on cpu: Best:") for m in shown), shown
    (edit,) = client.applied_edits
    (change,) = edit.edit.changes[uri]
    assert change.new_text != original and "@triton.jit" in change.new_text
    assert path.read_text() == original, "the file on disk is the user's: the edit goes through the editor"
    assert not list(path.parent.glob("vector_add.optimized*")), "no output beside the user's file"


@pytest.mark.slow
async def test_optimize_on_a_file_that_is_not_a_task(launch, folder):
    client = await launch(folder)
    _, uri = folder.write("plain.py", "x = 1\n")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="diagnose.optimize", arguments=[uri])
    )
    assert result["passed"] is None
    assert any(m.type == types.MessageType.Error for m in client.messages)


# --- cancellation ---------------------------------------------------------------------------------


async def start_optimize(client, examples, request_id: str):
    """diagnose.optimize on vector_add.py under a known request id, once its progress has begun."""
    path, uri = examples.copy("vector_add.py")
    open_document(client, uri, path.read_text())
    command = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command="diagnose.optimize", arguments=[uri]),
            msg_id=request_id,
        )
    )
    await wait_until(lambda: any(client.progress_reports.values()), what="progress to begin")
    (token,) = client.progress_reports
    assert client.progress_reports[token][0].cancellable is True
    return command, token


def ended(client, token) -> str | None:
    reports = client.progress_reports[token]
    return reports[-1].message if reports[-1].kind == "end" else None


def stopped(client) -> str | None:
    return next((m.message for m in client.log_messages if "stopped" in m.message or "ended" in m.message), None)


async def test_shutdown_while_optimize_runs_answers_promptly_and_cleanly(launch, examples):
    client = await launch(
        examples, capabilities=pytest_lsp.client_capabilities("visual-studio-code"), options={"maxCandidates": 1}
    )
    command, token = await start_optimize(client, examples, "optimize-1")
    start = time.monotonic()
    # pygls 2.1.1 alone answers this shutdown with "dictionary changed size during iteration".
    await asyncio.wait_for(client.shutdown_async(None), timeout=5)
    assert time.monotonic() - start < 1.0
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(command, timeout=5)
    assert "shutting down" in ended(client, token)
    client.exit(None)
    assert await asyncio.wait_for(client._server.wait(), timeout=30) == 0
    client.capabilities = None  # shut down already: the fixture's shutdown is a no-op


@pytest.mark.slow
@pytest.mark.parametrize("how", ["cancelRequest", "progress"])
async def test_optimize_can_be_cancelled_and_its_run_stops(launch, examples, how):
    client = await launch(
        examples, capabilities=pytest_lsp.client_capabilities("visual-studio-code"), options={"maxCandidates": 1}
    )
    command, token = await start_optimize(client, examples, f"optimize-{how}")
    if how == "cancelRequest":
        # Once the run is under way (verifying the task as given, a few seconds): it stops after that step.
        await wait_until(lambda: len(client.progress_reports[token]) > 1, what="a progress report")
        start = time.monotonic()
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=f"optimize-{how}"))
    else:
        start = time.monotonic()
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(command, timeout=5)
    assert time.monotonic() - start < 1.0
    assert ended(client, token).startswith("cancelled")
    # The agent's thread stops at its next step instead of running on to the end (tens of seconds).
    message = await wait_until(lambda: stopped(client), timeout=60, what="the run to stop")
    assert "stopped" in message and "[triage]" not in message, message
    assert not client.applied_edits
    assert not [m for m in client.messages if "Best:" in m.message]
    # The server goes on serving.
    await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=examples.copy("vector_add.py")[1]),
            position=types.Position(0, 0),
        )
    )
