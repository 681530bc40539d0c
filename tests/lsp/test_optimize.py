"""`diagnose.optimize`: the agent runs in the background with progress, an outcome message and the edit."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_lsp
from lsprotocol import types

from tests.lsp.conftest import open_document, wait_until

pytestmark = pytest.mark.asyncio


async def test_optimize_runs_the_agent_with_progress_and_applies_the_best_candidate(launch, examples):
    client = await launch(examples, capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
                          options={"maxCandidates": 1})
    path, uri = examples.copy("vector_add.py")
    original = path.read_text()
    open_document(client, uri, original)
    command = asyncio.ensure_future(client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="diagnose.optimize", arguments=[uri])))
    await wait_until(lambda: client.progress_reports, what="progress to begin")
    # The agent runs off the event loop: a request sent meanwhile is answered at once.
    start = time.monotonic()
    await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0)))
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


async def test_optimize_on_a_file_that_is_not_a_task(launch, folder):
    client = await launch(folder)
    _, uri = folder.write("plain.py", "x = 1\n")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="diagnose.optimize", arguments=[uri]))
    assert result["passed"] is None
    assert any(m.type == types.MessageType.Error for m in client.messages)
