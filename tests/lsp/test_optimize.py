"""`diagnose.optimize`: runs the check harness in the background with progress and a verdict message."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_lsp
from lsprotocol import types

from tests.lsp.conftest import open_document, wait_until

pytestmark = pytest.mark.asyncio


async def test_optimize_reports_progress_and_verdict(launch, examples):
    client = await launch(examples, capabilities=pytest_lsp.client_capabilities("visual-studio-code"))
    path, uri = examples.copy("vector_add.py")
    open_document(client, uri, path.read_text())
    command = asyncio.ensure_future(client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="diagnose.optimize", arguments=[uri])))
    await wait_until(lambda: client.progress_reports, what="progress to begin")
    # The check runs off the event loop: a request sent meanwhile is answered at once.
    start = time.monotonic()
    await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0)))
    assert time.monotonic() - start < 1.0 and not command.done()
    result = await command
    assert result["passed"] is True, result
    (reports,) = client.progress_reports.values()
    kinds = [r.kind for r in reports]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert "PASSED" in reports[-1].message
    shown = [m.message for m in client.messages]
    assert any("diagnose check vector_add.py on cpu: PASSED" in m for m in shown)


async def test_optimize_on_a_file_that_is_not_a_task(launch, folder):
    client = await launch(folder)
    _, uri = folder.write("plain.py", "x = 1\n")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="diagnose.optimize", arguments=[uri]))
    assert result["passed"] is None
    assert any(m.type == types.MessageType.Error for m in client.messages)
