"""Code actions: quick fixes for the triage diagnostics in the request, and the optimize command.

Each fix (`fixes.py`) becomes a `CodeAction` whose `WorkspaceEdit` the editor applies itself:
rewrites first, preferred when safe and labelled when unsafe, then the suppression comment. A task
file (one with `class ModelNew`) also gets a source action that runs `diagnose.optimize` on it.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace.position_codec import ServerTextPosition

from diagnose.lsp.convert import SOURCE
from diagnose.lsp.fixes import Fix, rewrite_fixes, suppression_fix
from diagnose.lsp.optimize import COMMAND
from diagnose.lsp.server import DiagnoseServer, DocumentState, document_path
from diagnose.records import Finding
from diagnose.triage.codes import RULES


def code_action(ls: DiagnoseServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    if doc is None:
        return None
    source, only = doc.source, params.context.only
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        state = ls.documents.get(uri)
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != SOURCE or diagnostic.code not in RULES:
                continue
            line = diagnostic.range.start.line
            finding = _finding(state, str(diagnostic.code), line)
            target = ls.settings_for(uri).target
            fixes = rewrite_fixes(finding, source, document_path(uri) or uri, target) if finding else []
            suppression = suppression_fix(str(diagnostic.code), source, line)
            for fix in fixes + ([suppression] if suppression else []):
                actions.append(_action(ls, fix, doc, uri, diagnostic))
    if _wanted(types.CodeActionKind.Source, only) and "class ModelNew" in source:
        actions.append(types.CodeAction(
            title="diagnose: optimize this task (diagnose.optimize)",
            kind=types.CodeActionKind.Source,
            command=types.Command(title="diagnose optimize", command=COMMAND, arguments=[uri])))
    return actions or None


def _wanted(kind: str, only: list[str] | None) -> bool:
    return only is None or any(kind == o or kind.startswith(f"{o}.") for o in only)


def _finding(state: DocumentState | None, code: str, line: int) -> Finding | None:
    """The stored finding behind a diagnostic the client sent back (same code, same start line)."""
    if state is None:
        return None
    return next((f for f in state.findings if f.code == code and f.location.line - 1 == line), None)


def _action(ls: DiagnoseServer, fix: Fix, doc, uri: str, diagnostic: types.Diagnostic) -> types.CodeAction:
    lines, codec = doc.lines, ls.workspace.position_codec

    def position(line: int, col: int) -> types.Position:
        return codec.position_to_client_units(lines, ServerTextPosition(line, col))

    edits = [types.TextEdit(range=types.Range(position(e.start_line, e.start_col), position(e.end_line, e.end_col)),
                            new_text=e.text) for e in fix.edits]
    if ls.supports("workspace.workspace_edit.document_changes"):
        # Versioned: an editor whose buffer moved on since refuses the edit instead of garbling it.
        edit = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            edits=edits)])
    else:
        edit = types.WorkspaceEdit(changes={uri: edits})
    return types.CodeAction(title=fix.label, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                            edit=edit, is_preferred=fix.preferred or None)
