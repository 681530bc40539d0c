"""One editor session, end to end: initialize, open, diagnostics, code action, save, IR, hover, shutdown."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.conftest import EXAMPLES
from tests.lsp.conftest import (
    apply_edit,
    codes,
    ir_diagnostics,
    line_of,
    open_document,
    published_version,
    replace_all,
    save,
    wait_until,
)

pytestmark = pytest.mark.asyncio


async def test_initialize_declares_the_features(client):
    caps = client.initialize_result.capabilities
    assert client.initialize_result.server_info.name == "diagnose"
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.text_document_sync.save is not None
    assert caps.hover_provider
    assert set(caps.code_action_provider.code_action_kinds) == {"quickfix", "source"}
    assert caps.diagnostic_provider.identifier == "diagnose"
    assert list(caps.execute_command_provider.commands) == ["diagnose.optimize"]


async def test_open_publishes_triage_findings(client, examples):
    path, uri = examples.copy("vector_add.py")
    text = path.read_text()
    open_document(client, uri, text)
    await wait_until(lambda: client.diagnostics.get(uri), what="diagnostics on open")
    tri001 = next(d for d in client.diagnostics[uri] if d.code == "TRI001")
    assert tri001.severity == types.DiagnosticSeverity.Warning
    assert tri001.source == "diagnose"
    assert tri001.range.start.line == line_of(text, "add_kernel[grid]")
    assert "element(s) per thread" in tri001.message
    assert tri001.data["rule"] == "too-few-elements-per-thread"
    doc = Path(tri001.code_description.href.removeprefix("file://"))
    assert doc.read_text().startswith("# TRI001 too-few-elements-per-thread")


@pytest.mark.slow
async def test_quick_fix_suppresses_the_finding(client, examples):
    path, uri = examples.copy("vector_add.py")
    text = path.read_text()
    open_document(client, uri, text)
    await wait_until(lambda: "TRI001" in codes(client, uri), what="TRI001")
    finding = next(d for d in client.diagnostics[uri] if d.code == "TRI001")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=finding.range,
            context=types.CodeActionContext(diagnostics=[finding], only=[types.CodeActionKind.QuickFix]),
        )
    )
    (action,) = [a for a in actions if isinstance(a, types.CodeAction) and a.title.startswith("Suppress")]
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.title == "Suppress TRI001 on this line"
    assert action.diagnostics[0].code == "TRI001"
    fixed = apply_edit(text, action.edit, uri)
    assert "# diagnose: ignore[TRI001]" in fixed.splitlines()[finding.range.start.line]
    replace_all(client, uri, fixed, version=2)
    await wait_until(lambda: published_version(client, uri) == 2, what="diagnostics of version 2")
    assert "TRI001" not in codes(client, uri)


async def test_task_file_offers_the_optimize_command(client, examples):
    path, uri = examples.copy("vector_add.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: client.diagnostics.get(uri), what="diagnostics")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.Source]),
        )
    )
    # pygls' client reads any action that carries a `command` as a Command (lsprotocol's union hook).
    assert len(actions) == 1
    assert "diagnose.optimize" in str(actions[0].command) and uri in str(actions[0].command)


async def test_save_adds_ir_facts_and_hover_shows_them(client, examples):
    path, uri = examples.copy("matmul.py")
    text = path.read_text()
    open_document(client, uri, text)
    await wait_until(lambda: "TRI005" in codes(client, uri), what="triage")
    save(client, uri)
    await wait_until(lambda: ir_diagnostics(client, uri), timeout=60, what="IR diagnostics after save")
    dot_line = line_of(text, "acc += tl.dot")
    dot = next(d for d in ir_diagnostics(client, uri) if d.code == "DotLowering")
    assert dot.range.start.line == dot_line
    assert "mma_v2" in dot.message and "wgmma" in dot.message
    assert dot.code_description.href.endswith("DotLowering.md")
    assert "TRI005" in codes(client, uri)  # triage findings stay beside the IR ones

    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(dot_line, 20))
    )
    value = hover.contents.value
    assert "mma_v2" in value and "tt.dot" in value  # the fact and its IR line
    assert "registers" in value and "spill" in value  # the kernel's resources
    load_line = line_of(text, "a = tl.load(")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(load_line, 12))
    )
    assert "128-bit" in hover.contents.value
    outside = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0))
    )
    assert outside is None


async def test_ir_facts_follow_edits_and_leave_edited_lines(client, examples):
    path, uri = examples.copy("matmul.py")
    text = path.read_text()
    open_document(client, uri, text)
    save(client, uri)
    await wait_until(lambda: ir_diagnostics(client, uri), timeout=60, what="IR diagnostics")
    dot_line = line_of(text, "acc += tl.dot")
    # Two lines inserted above the kernel: the fact moves down with its line.
    shifted = "# one\n# two\n" + text
    replace_all(client, uri, shifted, version=2)
    await wait_until(lambda: published_version(client, uri) == 2, what="version 2")
    assert [d.range.start.line for d in ir_diagnostics(client, uri) if d.code == "DotLowering"] == [dot_line + 2]
    # The dot line itself edited: its facts no longer describe it and are dropped until the next save.
    edited = shifted.replace("acc += tl.dot(a, b)", "acc += tl.dot(a, b, allow_tf32=False)")
    replace_all(client, uri, edited, version=3)
    await wait_until(lambda: published_version(client, uri) == 3, what="version 3")
    assert not [d for d in ir_diagnostics(client, uri) if d.code == "DotLowering"]


async def test_shutdown_exits_cleanly(launch, examples):
    client = await launch(examples)
    await client.shutdown_session()
    assert client._server.returncode == 0
    client.capabilities = None  # already shut down: the fixture's shutdown becomes a no-op


async def test_related_locations_are_sent(client, examples):
    path, uri = examples.copy("softmax.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: "TRI007" in codes(client, uri), what="TRI007")
    reload = next(d for d in client.diagnostics[uri] if d.code == "TRI007")
    (related,) = reload.related_information
    assert related.location.uri == uri and related.location.range.start.line < reload.range.start.line


@pytest.mark.slow
async def test_a_newer_save_supersedes_an_older_one(launch, folder):
    # A file of its own, so that no stored IR result answers the first save at once.
    path, uri = folder.write("matmul_saved_thrice.py", (EXAMPLES / "matmul.py").read_text())
    client = await launch(folder)
    open_document(client, uri, path.read_text())
    await wait_until(lambda: uri in client.diagnostics, what="triage")
    save(client, uri)
    # the second and third saves come while the first one's compile worker is still starting
    await wait_until(lambda: logged(client, "IR for save 1 started"), timeout=30, what="the first IR job")
    save(client, uri)
    save(client, uri)
    # The server publishes the diagnostics before it logs "IR facts for": wait for the log, the later of the two.
    await wait_until(lambda: logged(client, "IR facts for"), timeout=60, what="IR facts delivered")
    assert ir_diagnostics(client, uri)
    assert logged(client, "IR result dropped (saved again while it ran)"), "the first save's result is stale"
    assert logged(client, "IR for an older save skipped"), "the second save never starts a compile"
    assert logged(client, "IR for save 3 started")
    delivered = [m.message for m in client.log_messages if "IR facts for" in m.message]
    assert len(delivered) == 1


def logged(client, text: str) -> bool:
    return any(text in m.message for m in client.log_messages)
