"""Code actions: quick fixes for the triage diagnostics in the request, and the optimize command.

Each fix (`fixes.py`) becomes a `CodeAction` whose `WorkspaceEdit` the editor applies itself:
rewrites first, preferred when safe and labelled when unsafe, then the suppression comment. A task
file (one with `class ModelNew`) and a kernel module (any file with `triton.jit`) also get a source
action that runs `diagnose.optimize` on it.

The menu answers from what is known already, the findings of the last triage and the rewrite table,
without running a rewrite (each takes 0.05-0.5 s): for a client that resolves code actions'
edits (`codeAction/resolve`), each fix comes without its edit, and `resolve` computes the edit of
the one picked, in a thread. When the picked rewrite does not apply after all, or the document
changed since the menu, it comes back without an edit and a message says why. A client that cannot
resolve gets every applicable fix with its edit in the menu, as computed there.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.workspace.position_codec import ServerTextPosition

from diagnose.lsp.convert import SOURCE, text_of
from diagnose.lsp.fixes import (
    Fix,
    fix_label,
    offered_rewrites,
    rewrite_fix_by_id,
    rewrite_fixes,
    suppression_edit,
    suppression_fix,
    suppression_title,
)
from diagnose.lsp.optimize import COMMAND
from diagnose.lsp.server import DiagnoseServer, DocumentState, document_path
from diagnose.records import Finding
from diagnose.triage.codes import RULES

OPTIMIZE_TITLE = "diagnose: optimize this task (diagnose.optimize)"
# A kernel module: replayed from its captured launches (`diagnose capture`) or its own tests.
OPTIMIZE_MODULE_TITLE = "diagnose: optimize this module (diagnose.optimize)"


def code_action(ls: DiagnoseServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    if doc is None:
        return None
    source, only = doc.source, params.context.only
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        state = ls.documents.get(uri)
        target = ls.settings_for(uri).target
        lazy = _resolves_edits(ls)
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != SOURCE or diagnostic.code not in RULES:
                continue
            code, line = str(diagnostic.code), diagnostic.range.start.line
            finding = _finding(state, code, line)
            if lazy:
                actions += _menu(finding, code, line, target, doc, uri, diagnostic)
                continue
            fixes = rewrite_fixes(finding, source, document_path(uri) or uri, target) if finding else []
            suppression = suppression_fix(code, source, line)
            for fix in fixes + ([suppression] if suppression else []):
                actions.append(_action(ls, fix, doc, uri, diagnostic))
    if _wanted(types.CodeActionKind.Source, only) and ("class ModelNew" in source or "triton.jit" in source):
        actions.append(
            types.CodeAction(
                title=OPTIMIZE_TITLE if "class ModelNew" in source else OPTIMIZE_MODULE_TITLE,
                kind=types.CodeActionKind.Source,
                command=types.Command(title="diagnose optimize", command=COMMAND, arguments=[uri]),
            )
        )
    return actions or None


async def resolve(ls: DiagnoseServer, action: types.CodeAction) -> types.CodeAction:
    """`codeAction/resolve`: the edit of the fix the user picked, computed now (a rewrite in a thread)."""
    data: Any = action.data
    if action.edit is not None or not isinstance(data, dict) or "fix" not in data:
        return action
    uri, code, line = data["uri"], data["code"], data["line"]
    doc, state = ls.open_document(uri), ls.documents.get(uri)
    if doc is None or doc.version != data.get("version"):
        return _unresolved(ls, action, "the document changed since the menu was shown; ask for the fixes again")
    version, lines, source = doc.version, list(doc.lines), doc.source
    if data["fix"] == "suppress":
        fix = suppression_fix(code, source, line) or "no comment can go on this line"
    else:
        finding = _finding(state, code, line)
        if finding is None:
            return _unresolved(ls, action, f"{code} is no longer reported on this line")
        fix = await ls.run_blocking(
            rewrite_fix_by_id, data["fix"], finding, source, document_path(uri) or uri, ls.settings_for(uri).target
        )
    if not isinstance(fix, Fix):
        return _unresolved(ls, action, fix)
    doc = ls.open_document(uri)
    if doc is None or doc.version != version:  # typed on while the rewrite ran
        return _unresolved(ls, action, "the document changed while the fix was computed; ask for the fixes again")
    action.edit = _edit(ls, fix, lines, version, uri)
    return action


def _resolves_edits(ls: DiagnoseServer) -> bool:
    """Whether the client resolves code actions and lets `resolve` fill in their edit."""
    path = "text_document.code_action.resolve_support.properties"
    return "edit" in (get_capability(ls.client_capabilities, path, None) or ())


def _menu(
    finding: Finding | None, code: str, line: int, target: str, doc, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    """The fixes of one diagnostic, without their edits (fast: no rewrite runs, nothing is parsed)."""

    def action(title: str, fix: str, preferred: bool = False) -> types.CodeAction:
        return types.CodeAction(
            title=title,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=preferred or None,
            data={"fix": fix, "uri": uri, "version": doc.version, "code": code, "line": line},
        )

    out = [
        action(fix_label(rewrite.title, rewrite.safety), rewrite.id, rewrite.safety == "safe")
        for rewrite in (offered_rewrites(code, target) if finding else [])
    ]
    if line < len(doc.lines) and suppression_edit(code, text_of(doc.lines[line]), line) is not None:
        out.append(action(suppression_title(code), "suppress"))
    return out


def _unresolved(ls: DiagnoseServer, action: types.CodeAction, why: str) -> types.CodeAction:
    """The picked fix cannot be made: the action goes back without an edit, and the user is told why."""
    ls.window_show_message(
        types.ShowMessageParams(type=types.MessageType.Info, message=f"diagnose: {action.title}: {why}")
    )
    return action


def _wanted(kind: str, only: list[str] | None) -> bool:
    return only is None or any(kind == o or kind.startswith(f"{o}.") for o in only)


def _finding(state: DocumentState | None, code: str, line: int) -> Finding | None:
    """The stored finding behind a diagnostic the client sent back (same code, same start line)."""
    if state is None:
        return None
    return next((f for f in state.findings if f.code == code and f.location.line - 1 == line), None)


def _action(ls: DiagnoseServer, fix: Fix, doc, uri: str, diagnostic: types.Diagnostic) -> types.CodeAction:
    return types.CodeAction(
        title=fix.label,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=_edit(ls, fix, doc.lines, doc.version, uri),
        is_preferred=fix.preferred or None,
    )


def _edit(ls: DiagnoseServer, fix: Fix, lines: list[str], version: int | None, uri: str) -> types.WorkspaceEdit:
    """The fix's edits (0-based lines, character columns) as the client's WorkspaceEdit."""
    codec = ls.workspace.position_codec

    def position(line: int, col: int) -> types.Position:
        return codec.position_to_client_units(lines, ServerTextPosition(line, col))

    edits = [
        types.TextEdit(
            range=types.Range(position(e.start_line, e.start_col), position(e.end_line, e.end_col)), new_text=e.text
        )
        for e in fix.edits
    ]
    if ls.supports("workspace.workspace_edit.document_changes"):
        # Versioned: an editor whose buffer moved on since refuses the edit instead of garbling it.
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=edits
                )
            ]
        )
    return types.WorkspaceEdit(changes={uri: edits})
