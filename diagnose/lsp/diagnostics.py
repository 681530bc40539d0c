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
- Mid-edit, while the text does not parse, the findings of the last text that parsed stay, beside
  the syntax error, on the lines they have moved to (`follow_lines`: unchanged lines, and edited
  blocks that kept their line count, such as the line being typed); findings of lines deleted since
  go. Once the text parses again its own findings replace them.
- When IR facts cannot be computed for a save (no example launches, the user's code raises, the
  compile worker crashed), an `IR000` warning on line 1 says why, until a save that compiles.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from difflib import SequenceMatcher
from pathlib import Path

from lsprotocol import types

from diagnose import syntax
from diagnose.errors import DiagnoseError, UsageError
from diagnose.lsp.convert import (
    compile_failure_diagnostic,
    fact_diagnostic,
    finding_diagnostic,
    ir_unavailable_diagnostic,
    text_of,
)
from diagnose.lsp.ir_facts import inspect_saved, line_map, snapshot_from_result
from diagnose.lsp.server import DiagnoseServer, DocumentState, document_path
from diagnose.lsp.settings import Settings
from diagnose.records import Finding, Location
from diagnose.triage.codes import select_codes
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


def triage_text(source: str, path: str, settings: Settings) -> tuple[list[Finding], bool] | None:
    """Blocking: the findings of one text and whether it parses, or None for a file too large to
    triage per keystroke."""
    if source.count("\n") > LARGE_FILE_LINES:
        return None
    findings = triage_source(source, path, settings.target, select=settings.select, ignore=settings.ignore)
    return findings, parses(source, findings, settings)


def parses(source: str, findings: list[Finding], settings: Settings) -> bool:
    """Whether the text parses: TRI000 (a syntax error) says not; where TRI000 is not selected, parse."""
    if any(f.code == "TRI000" for f in findings):
        return False
    if "TRI000" in select_codes(settings.select, settings.ignore):
        return True
    try:
        syntax.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


def follow_lines(old: list[str], new: list[str]) -> dict[int, int]:
    """1-based line of `old` -> its line in `new`: unchanged lines, and the lines of each edited block
    that kept its line count (a line being typed), in order. Lines are compared without their ends."""
    matcher = SequenceMatcher(None, [text_of(x) for x in old], [text_of(x) for x in new], autojunk=False)
    out: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            out.update((i1 + k + 1, j1 + k + 1) for k in range(i2 - i1))
    return out


def carried(findings: list[Finding], old: list[str], new: list[str]) -> list[Finding]:
    """Findings of text `old` moved to their lines in `new`; those whose line is gone are dropped."""
    moved = follow_lines(old, new)

    def move(loc: Location) -> Location | None:
        if loc.line not in moved:
            return None
        shift = moved[loc.line] - loc.line
        return dataclasses.replace(
            loc, line=loc.line + shift, end_line=None if loc.end_line is None else loc.end_line + shift
        )

    out = []
    for f in findings:
        if (location := move(f.location)) is not None:
            secondary = tuple(loc for loc in map(move, f.secondary) if loc is not None)
            out.append(dataclasses.replace(f, location=location, secondary=secondary))
    return out


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
        result = await ls.run_blocking(triage_text, source, document_path(uri) or uri, settings)
    except UsageError as err:  # a bad target or code that slipped past the settings check
        ls.warn_once(f"triage: {err}")
        return False
    if result is None:
        ls.warn_once(f"{uri}: over {LARGE_FILE_LINES} lines, not triaged")
        result = [], True
    findings, parsed = result
    # Runs may overlap (an edit and a settings change): the one asked for last is the one kept.
    if ls.documents.get(uri) is not state or ls.open_document(uri) is None or ticket < state.triage_stored:
        return False
    state.triage_stored = ticket
    lines = source.splitlines(keepends=True)
    if parsed:
        state.parsed_lines, state.parsed_findings = lines, findings
    else:  # mid-edit: the last findings stay until the text parses again
        findings = findings + carried(state.parsed_findings, state.parsed_lines, lines)
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
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, version=state.triaged_version, diagnostics=current_diagnostics(ls, uri))
    )


def ir_diagnostics(ls: DiagnoseServer, state: DocumentState) -> list[types.Diagnostic]:
    """Missed IR facts and compile failures, placed on the triaged text's unchanged lines, or why
    the last save has none.

    Autotune configs of one kernel that miss the same thing on the same line make one diagnostic.
    """
    lines, codec = state.triaged_lines, ls.workspace.position_codec
    if state.ir_problem is not None and lines:
        return [ir_unavailable_diagnostic(state.ir_problem, lines, codec)]
    snapshot = state.ir
    if snapshot is None or not lines:
        return []
    moved = line_map(snapshot.lines, [text_of(line) for line in lines])
    grouped: dict[tuple, tuple] = {}
    out = []
    for kernel in snapshot.kernels:
        if kernel.error and kernel.def_line in moved:
            out.append(
                compile_failure_diagnostic(
                    kernel.title,
                    snapshot.target,
                    kernel.error.get("message", "?"),
                    kernel.error.get("stage"),
                    moved[kernel.def_line],
                    lines,
                    codec,
                )
            )
        for e in kernel.evidence:
            if e.kind != "missed" or e.location.line not in moved:
                continue
            key = (e.location.line, e.location.col, e.name, e.args)
            evidence, titles = grouped.get(key, (e, []))
            grouped[key] = (evidence, titles + [kernel.title])
    for (line, *_), (evidence, titles) in grouped.items():
        out.append(
            fact_diagnostic(
                evidence,
                list(dict.fromkeys(titles)),
                snapshot.target,
                moved[line],
                lines,
                codec,
                ls.rule_docs.href(evidence.name),
            )
        )
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
        _ir_unavailable(ls, uri, state, f"cannot read the saved file: {err}", types.MessageType.Warning)
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
    state.ir_problem = None  # the IR000 warning goes with this delivery
    state.published += 1
    deliver(ls, uri)  # first: a client told "IR facts for" has the diagnostics that go with them
    ls.log(
        f"{Path(path).name}: IR facts for {state.ir.target} "
        f"({'stored result' if state.ir.from_cache else f'{state.ir.seconds:.1f} s'})"
    )


def _ir_unavailable(ls: DiagnoseServer, uri: str, state: DocumentState, problem: str, level: types.MessageType) -> None:
    """No facts for this save: old facts would describe other code, so they go; the reason is
    logged and shown on line 1 (IR000) until a save compiles."""
    if problem == state.ir_problem and state.ir is None:
        return
    ls.log(f"IR facts unavailable for {uri}: {problem}", level)
    state.ir_problem, state.ir = problem, None
    state.published += 1
    deliver(ls, uri)


def _input_hash(result: dict, path: str) -> str | None:
    here = str(Path(path).resolve())
    return next((h for f, h in result.get("inputs", {}).items() if str(Path(f).resolve()) == here), None)
