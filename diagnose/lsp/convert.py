"""Triage findings and IR facts as LSP diagnostics: pure functions of records and document lines.

Columns in `diagnose` records are 0-based characters (code points); LSP positions count the code
units of the encoding negotiated at initialize (UTF-16 unless the client offers another), so every
range goes through pygls' position codec with the lines of the text the record was made from.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from diagnose.ir.summary import phrase
from diagnose.records import Evidence, Finding
from diagnose.triage.codes import RULES

SOURCE = "diagnose"
IR_SOURCE = "diagnose ir"
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
# IR facts become diagnostics only when something was missed; these are worse or milder than a warning.
IR_SEVERITY = {
    "SharedMemoryOverLimit": types.DiagnosticSeverity.Error,
    "CompilerRemark": types.DiagnosticSeverity.Information,
    "CompilerWarning": types.DiagnosticSeverity.Information,
}
COMPILE_FAILED = "IRCompileFailed"
IR_UNAVAILABLE = "IR000"


def text_of(line: str) -> str:
    return line.rstrip("\r\n")


def to_range(
    lines: Sequence[str],
    codec: PositionCodec,
    line: int,
    col: int = 0,
    end_line: int | None = None,
    end_col: int | None = None,
) -> types.Range:
    """An LSP range from 1-based lines and 0-based character columns, clamped to the text.

    No end means "to the end of the start line" (the way triage underlines a multi-line node's start).
    """
    if not lines:
        return types.Range(types.Position(0, 0), types.Position(0, 0))
    start_line = min(max(line, 1), len(lines)) - 1
    start_col = min(max(col, 0), len(text_of(lines[start_line])))
    if end_line is None or end_col is None:
        stop_line, stop_col = start_line, len(text_of(lines[start_line]))
    else:
        stop_line = min(max(end_line, 1), len(lines)) - 1
        stop_col = min(max(end_col, 0), len(text_of(lines[stop_line])))
    stop_line, stop_col = max((stop_line, stop_col), (start_line, start_col))
    return types.Range(
        codec.position_to_client_units(lines, ServerTextPosition(start_line, start_col)),
        codec.position_to_client_units(lines, ServerTextPosition(stop_line, stop_col)),
    )


def finding_diagnostic(
    finding: Finding, uri: str, lines: Sequence[str], codec: PositionCodec, href: str | None
) -> types.Diagnostic:
    loc = finding.location
    rule = RULES.get(finding.code)
    message = finding.message if finding.confidence != "low" else f"{finding.message} (low confidence)"
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri, to_range(lines, codec, s.line, s.col, s.end_line, s.end_col)),
            message=f"{finding.code} also involves this code",
        )
        for s in finding.secondary
    ]
    return types.Diagnostic(
        range=to_range(lines, codec, loc.line, loc.col, loc.end_line, loc.end_col),
        message=message,
        severity=SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related or None,
        data={
            "origin": "triage",
            "rule": rule.name if rule else None,
            "confidence": finding.confidence,
            "fix": rule.fix_title if rule else None,
        },
    )


def fact_diagnostic(
    evidence: Evidence,
    kernels: Sequence[str],
    target: str,
    line: int,
    lines: Sequence[str],
    codec: PositionCodec,
    href: str | None,
) -> types.Diagnostic:
    """A missed IR fact at (current) `line`; `kernels` are the compiled variants that showed it."""
    col = evidence.location.col if evidence.location else 0
    return types.Diagnostic(
        range=to_range(lines, codec, line, col),
        message=f"{phrase(evidence)} [{', '.join(kernels)} on {target}]",
        severity=IR_SEVERITY.get(evidence.name, types.DiagnosticSeverity.Warning),
        code=evidence.name,
        code_description=types.CodeDescription(href=href) if href else None,
        source=IR_SOURCE,
        data={"origin": "ir", "source": evidence.source, "raw": evidence.raw},
    )


def compile_failure_diagnostic(
    kernel: str, target: str, message: str, stage: str | None, line: int, lines: Sequence[str], codec: PositionCodec
) -> types.Diagnostic:
    where = f" in {stage}" if stage else ""
    return types.Diagnostic(
        range=to_range(lines, codec, line),
        message=f"{kernel} does not compile for {target}{where}: {message}",
        severity=types.DiagnosticSeverity.Error,
        code=COMPILE_FAILED,
        source=IR_SOURCE,
        data={"origin": "ir"},
    )


def ir_unavailable_diagnostic(problem: str, lines: Sequence[str], codec: PositionCodec) -> types.Diagnostic:
    """Why the last save has no IR facts (no example launches, the user's code raised, a crash), on line 1."""
    return types.Diagnostic(
        range=to_range(lines, codec, 1),
        message=f"IR facts unavailable: {problem}",
        severity=types.DiagnosticSeverity.Warning,
        code=IR_UNAVAILABLE,
        source=SOURCE,
        data={"origin": "ir"},
    )
