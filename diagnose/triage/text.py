"""The terminal view: ruff's full style, one block per finding with the source line and a caret
under the column range, then a one-line summary."""

from __future__ import annotations

from diagnose.records import Finding
from diagnose.triage.codes import RULES
from diagnose.triage.context import source_lines


def render_text(findings: list[Finding], sources: dict[str, str]) -> str:
    """`sources` maps each finding's path to the file's text (for the quoted line)."""
    blocks = [_block(f, sources.get(f.location.path, "")) for f in findings]
    return "\n".join(blocks + [summary(findings)]) + "\n"


def _block(f: Finding, source: str) -> str:
    loc = f.location
    rule = RULES.get(f.code)
    name = f" ({rule.name})" if rule else ""
    head = f"{loc.path}:{loc.line}:{loc.col + 1}: {f.code} [{f.severity}] {f.message}{name}"
    lines = source_lines(source)
    text = lines[loc.line - 1].expandtabs(1) if 0 < loc.line <= len(lines) else ""
    if not text:
        return head + "\n"
    # A multi-line node is underlined to the end of its first line.
    end = loc.end_col if loc.end_line == loc.line and loc.end_col is not None else len(text)
    width = max(1, end - loc.col)
    gutter = " " * len(str(loc.line))
    out = [
        head,
        f"{gutter} |",
        f"{loc.line} | {text}",
        f"{gutter} | {' ' * loc.col}{'^' * width} {f.code}",
        f"{gutter} |",
    ]
    if rule:
        out.append(f"{gutter} = help: {rule.fix_title}")
    return "\n".join(out) + "\n"


def summary(findings: list[Finding]) -> str:
    if not findings:
        return "All checks passed."
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
    parts = ", ".join(f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts.items() if n)
    return f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} ({parts})."
