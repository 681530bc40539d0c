"""Diagnostics: triage findings on open and on change, IR facts on save, pushed or pulled.

- Open: triage at once. Change: debounced on both edges. The first change after `debounceMs` of
  quiet is triaged at once; changes that follow closer together wait for `debounceMs` of quiet. A
  change that comes while the document is being triaged marks it for one more run when that one
  ends, so steady typing gets answers and a slow file is never triaged twice at once.
- Save: IR facts for the configured target, in the background (`diagnose inspect` in its worker
  subprocess, one compile at a time). A newer save supersedes an older one: a job still waiting
  does not start, and a finished one that is no longer the newest is dropped. Facts are kept with
  the saved text and shown on the lines that are unchanged since; edited lines lose theirs until
  the next save.
- A triage result is stored unless one asked for later already is, and published with the version
  of the text it was computed on.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

from lsprotocol import types

from diagnose.errors import DiagnoseError, UsageError
from diagnose.lsp.convert import compile_failure_diagnostic, fact_diagnostic, finding_diagnostic, text_of
from diagnose.lsp.ir_facts import inspect_saved, line_map, snapshot_from_result
from diagnose.lsp.server import DiagnoseServer, DocumentState, document_path
from diagnose.lsp.settings import Settings
from diagnose.records import Finding
from diagnose.triage.engine import triage_source

# Beyond this many lines a file is not triaged (about 2 s of rule work per change on a laptop core).
LARGE_FILE_LINES = 50_000


# --- handlers -----------------------------------------------------------------------------------

async def did_open(ls: DiagnoseServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.state(params.text_document.uri)
    if not ls.pull_diagnostics:
        await refresh(ls, params.text_document.uri)


def did_change(ls: DiagnoseServer, params: types.DidChangeTextDocumentParams) -> None:
    if ls.pull_diagnostics:  # the client pulls when it wants them
        return
    uri = params.text_document.uri
    state = ls.state(uri)
    if state.debounce is not None and not state.debounce.done():
        state.debounce.cancel()
    delay = ls.settings_for(uri).debounce_ms / 1000
    now = time.monotonic()
    quiet = now - state.last_change >= delay
    state.last_change = now
    state.debounce = ls.spawn(_triage_after_quiet(ls, uri, 0 if quiet else delay))


def did_save(ls: DiagnoseServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.spawn(refresh_ir(ls, params.text_document.uri))


def did_close(ls: DiagnoseServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.forget(uri)
    if not ls.pull_diagnostics:  # clear what the editor shows for a closed file
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


async def pull(ls: DiagnoseServer, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    if not ls.pull_diagnostics or doc is None:
        # This client gets them pushed (see lifecycle.py): an empty pull keeps it from showing two copies.
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    state = ls.state(uri)
    if state.triaged_version is None or state.triaged_version != doc.version:
        await compute_triage(ls, uri)
    result_id = f"{state.triaged_version}.{state.published}"
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(items=current_diagnostics(ls, uri), result_id=result_id)


# --- triage -------------------------------------------------------------------------------------

def triage_text(source: str, path: str, settings: Settings) -> list[Finding] | None:
    """Blocking: the findings of one text, or None for a file too large to triage per keystroke."""
    if source.count("\n") > LARGE_FILE_LINES:
        return None
    return triage_source(source, path, settings.target, select=settings.select, ignore=settings.ignore)


async def _triage_after_quiet(ls: DiagnoseServer, uri: str, delay: float) -> None:
    await asyncio.sleep(delay)
    state = ls.state(uri)
    state.debounce = None  # from here on a new change does not cancel this triage
    if state.triaging:  # the running one triages again when it ends
        state.stale = True
        return
    state.triaging = True
    try:
        while True:
            state.stale = False
            await refresh(ls, uri)
            doc = ls.open_document(uri)
            if not state.stale or doc is None or doc.version == state.triaged_version:
                return
    finally:
        state.triaging = False


async def refresh(ls: DiagnoseServer, uri: str) -> None:
    """Triage the document as it is now and deliver the result."""
    if await compute_triage(ls, uri):
        deliver(ls, uri)


async def compute_triage(ls: DiagnoseServer, uri: str) -> bool:
    """Triage the current text; False when nothing new was stored (closed, or a newer result won)."""
    doc = ls.open_document(uri)
    if doc is None:
        return False
    version, source = doc.version, doc.source
    settings = ls.settings_for(uri)
    state = ls.state(uri)
    state.triage_requests += 1
    ticket = state.triage_requests
    try:
        findings = await ls.run_blocking(triage_text, source, document_path(uri) or uri, settings)
    except UsageError as err:  # a bad target or code that slipped past the settings check
        ls.warn_once(f"triage: {err}")
        return False
    if findings is None:
        ls.warn_once(f"{uri}: over {LARGE_FILE_LINES} lines, not triaged")
        findings = []
    # Runs may overlap (an edit and a settings change): the one asked for last is the one kept.
    if ls.documents.get(uri) is not state or ls.open_document(uri) is None or ticket < state.triage_stored:
        return False
    state.triage_stored = ticket
    lines = source.splitlines(keepends=True)
    codec = ls.workspace.position_codec
    state.triaged_version, state.triaged_lines, state.findings = version, lines, findings
    state.triage = [finding_diagnostic(f, uri, lines, codec, ls.rule_docs.href(f.code)) for f in findings]
    state.published += 1
    return True


# --- delivery -----------------------------------------------------------------------------------

def current_diagnostics(ls: DiagnoseServer, uri: str) -> list[types.Diagnostic]:
    state = ls.state(uri)
    return state.triage + ir_diagnostics(ls, state)


def deliver(ls: DiagnoseServer, uri: str) -> None:
    """Push the document's diagnostics, or ask a pulling client to pull again."""
    if ls.pull_diagnostics:
        ls.workspace_diagnostic_refresh(None)
        return
    state = ls.documents.get(uri)
    if state is None or state.triaged_version is None:
        return
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=state.triaged_version, diagnostics=current_diagnostics(ls, uri)))


def ir_diagnostics(ls: DiagnoseServer, state: DocumentState) -> list[types.Diagnostic]:
    """Missed IR facts and compile failures, placed on the triaged text's unchanged lines.

    Autotune configs of one kernel that miss the same thing on the same line make one diagnostic.
    """
    snapshot = state.ir
    if snapshot is None or not state.triaged_lines:
        return []
    lines = state.triaged_lines
    moved = line_map(snapshot.lines, [text_of(line) for line in lines])
    codec = ls.workspace.position_codec
    grouped: dict[tuple, tuple] = {}
    out = []
    for kernel in snapshot.kernels:
        if kernel.error and kernel.def_line in moved:
            out.append(compile_failure_diagnostic(kernel.title, snapshot.target, kernel.error.get("message", "?"),
                                                  kernel.error.get("stage"), moved[kernel.def_line], lines, codec))
        for e in kernel.evidence:
            if e.kind != "missed" or e.location.line not in moved:
                continue
            key = (e.location.line, e.location.col, e.name, e.args)
            evidence, titles = grouped.get(key, (e, []))
            grouped[key] = (evidence, titles + [kernel.title])
    for (line, *_), (evidence, titles) in grouped.items():
        out.append(fact_diagnostic(evidence, list(dict.fromkeys(titles)), snapshot.target, moved[line], lines,
                                   codec, ls.rule_docs.href(evidence.name)))
    return out


# --- IR on save ---------------------------------------------------------------------------------

async def refresh_ir(ls: DiagnoseServer, uri: str) -> None:
    """Compute the saved file's IR facts in the background and deliver them (newest save wins)."""
    path = document_path(uri)
    settings = ls.settings_for(uri)
    state = ls.documents.get(uri)
    if path is None or state is None or not settings.ir_on_save:
        return
    try:
        saved = Path(path).read_bytes()
    except OSError as err:
        ls.log(f"{path}: cannot read the saved file: {err}", types.MessageType.Warning)
        return
    saved_text = saved.decode("utf-8", errors="replace")
    if "triton" not in saved_text:  # no kernels: nothing to compile
        return
    state.ir_saves += 1
    ticket = state.ir_saves
    async with ls.ir_slot:
        if ls.documents.get(uri) is not state or state.ir_saves != ticket:
            ls.log(f"{Path(path).name}: IR for an older save skipped (saved again)")
            return
        ls.log(f"{Path(path).name}: IR for save {ticket} started ({settings.target})")
        try:
            result = await ls.run_blocking(inspect_saved, path, settings.target)
        except UsageError as err:  # expected in an editor: no example arguments, a target it cannot compile
            _ir_unavailable(ls, uri, state, str(err), types.MessageType.Info)
            return
        except DiagnoseError as err:  # the compile worker crashed, hung or ran out of memory
            _ir_unavailable(ls, uri, state, str(err), types.MessageType.Warning)
            return
    if ls.documents.get(uri) is not state or state.ir_saves != ticket:
        ls.log(f"{Path(path).name}: IR result dropped (saved again while it ran)")
        return
    if _input_hash(result, path) not in (None, hashlib.sha256(saved).hexdigest()):
        ls.log(f"{Path(path).name}: IR result dropped (the file changed on disk while it ran)")
        return
    state.ir = snapshot_from_result(result, path, saved_text)
    state.ir_problem = None
    state.published += 1
    ls.log(f"{Path(path).name}: IR facts for {state.ir.target} "
           f"({'stored result' if state.ir.from_cache else f'{state.ir.seconds:.1f} s'})")
    deliver(ls, uri)


def _ir_unavailable(ls: DiagnoseServer, uri: str, state: DocumentState, problem: str,
                    level: types.MessageType) -> None:
    """No facts for this save: old facts would describe other code, so they go; the reason is logged."""
    if problem != state.ir_problem:
        ls.log(f"IR facts unavailable for {uri}: {problem}", level)
    state.ir_problem = problem
    if state.ir is not None:
        state.ir = None
        state.published += 1
        deliver(ls, uri)


def _input_hash(result: dict, path: str) -> str | None:
    here = str(Path(path).resolve())
    return next((h for f, h in result.get("inputs", {}).items() if str(Path(f).resolve()) == here), None)
