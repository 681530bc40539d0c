"""Real editors' capability profiles (pytest-lsp's recordings) and a pull-diagnostics client."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types

from tests.lsp.conftest import apply_edit, codes, ir_diagnostics, line_of, open_document, save, wait_until

pytestmark = pytest.mark.asyncio

PULLING = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(diagnostic=types.DiagnosticClientCapabilities()),
    workspace=types.WorkspaceClientCapabilities(
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    ),
)


@pytest.mark.slow
@pytest.mark.parametrize("editor", ["neovim", "visual-studio-code"])
async def test_editor_profile_session(launch, examples, editor):
    """Neovim 0.11 and VS Code 1.65 as they introduce themselves: push diagnostics, fix, save, hover."""
    client = await launch(examples, capabilities=pytest_lsp.client_capabilities(editor))
    path, uri = examples.copy("matmul.py")
    text = path.read_text()
    open_document(client, uri, text)
    await wait_until(lambda: "TRI005" in codes(client, uri), what="pushed diagnostics")
    # Neovim can pull but cannot be told to pull again, so it gets pushes; its pulls come back empty.
    pulled = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert list(pulled.items) == []

    finding = next(d for d in client.diagnostics[uri] if d.code == "TRI005")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=finding.range,
            context=types.CodeActionContext(diagnostics=[finding]),
        )
    )
    # Rewrites come first when they apply; this session applies the suppression.
    fix = next(
        a
        for a in actions
        if isinstance(a, types.CodeAction) and a.kind == "quickfix" and a.title.startswith("Suppress")
    )
    # Both resolve code actions: the edit comes when the fix is picked.
    assert fix.edit is None
    fix = await client.code_action_resolve_async(fix)
    # Versioned edits where the client declares them (VS Code), plain `changes` otherwise (Neovim).
    assert bool(fix.edit.document_changes) == (editor == "visual-studio-code")
    assert "# diagnose: ignore[TRI005]" in apply_edit(text, fix.edit, uri)

    save(client, uri)
    await wait_until(lambda: ir_diagnostics(client, uri), timeout=60, what="IR diagnostics")
    dot_line = line_of(text, "acc += tl.dot")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(dot_line, 10))
    )
    assert hover.contents.kind == types.MarkupKind.Markdown and "mma_v2" in hover.contents.value


async def test_pull_diagnostics(launch, examples):
    client = await launch(examples, capabilities=PULLING)
    path, uri = examples.copy("matmul.py")
    open_document(client, uri, path.read_text())
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert report.kind == "full" and "TRI005" in [d.code for d in report.items]
    again = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=report.result_id
        )
    )
    assert again.kind == "unchanged"
    assert uri not in client.diagnostics  # nothing was pushed

    refreshes = client.diagnostic_refresh_count
    save(client, uri)
    await wait_until(lambda: client.diagnostic_refresh_count > refreshes, timeout=60, what="a refresh request")
    after = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=report.result_id
        )
    )
    assert after.kind == "full" and "DotLowering" in [d.code for d in after.items]
