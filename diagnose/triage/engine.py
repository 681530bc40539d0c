"""Run the rules on one source text: select them, build the context once, turn hits into findings,
drop suppressed ones. This is the library entry point for the editor (LSP) and the agent.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from diagnose.records import Evidence, Finding, Location
from diagnose.triage.rewrite_ids import REWRITE_IDS
from diagnose.triage.codes import RULES, select_codes
from diagnose.triage.context import Context, build_context
from diagnose.triage.rule import Hit, Rule, Span
from diagnose.targets import Target, lookup

SUPPRESSION = re.compile(r"#\s*diagnose:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def triage_source(
    source: str,
    path: str,
    target: str | Target = "cuda:sm90",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
) -> list[Finding]:
    """Findings for one file's text, sorted by position. Never raises on any input text; raises
    `UsageError` only for a bad target or an unknown code in `select`/`ignore`."""
    tgt = lookup(target) if isinstance(target, str) else target
    rules = [RULES[code]() for code in select_codes(select, ignore) if RULES[code].applies_to(tgt)]
    try:
        ctx = build_context(source, path, tgt)
        findings = [_finding(rule, hit, ctx) for rule in rules for hit in rule.check(ctx)]
    except RecursionError:
        # Nesting deeper than the interpreter's stack: say so once rather than crash the editor.
        ctx = Context(
            path=path,
            source=source,
            target=tgt,
            syntax_error=SyntaxError("too deeply nested to analyse", (path, 1, 1, "", 1, 1)),
        )
        findings = [_finding(r, h, ctx) for r in rules if r.code == "TRI000" for h in r.check(ctx)]
    findings = _dedupe(f for f in findings if not _suppressed(f, ctx))
    return sorted(findings, key=lambda f: (f.location.line, f.location.col, f.code))


def _finding(rule: Rule, hit: Hit, ctx: Context) -> Finding:
    loc = _location(hit.node, ctx)
    evidence = Evidence(
        stage="triage",
        source="ast",
        name=type(rule).__name__,
        kind=rule.evidence_kind,
        location=loc,
        args=hit.args,
        raw=ctx.line(loc.line).strip() or None,
    )
    return Finding(
        code=rule.code,
        message=hit.message,
        severity=hit.severity or rule.severity,
        confidence=hit.confidence or rule.confidence,
        location=loc,
        evidence=(evidence,),
        secondary=tuple(_location(n, ctx) for n in hit.secondary),
        rewrites=REWRITE_IDS.get(rule.code, ()),
    )


def _location(node: ast.AST | Span, ctx: Context) -> Location:
    if isinstance(node, Span):
        return Location(ctx.path, node.line, node.col, node.end_line, node.end_col)
    return ctx.location(node)


def _suppressed(finding: Finding, ctx: Context) -> bool:
    match = SUPPRESSION.search(ctx.line(finding.location.line))
    if match is None:
        return False
    codes = match.group("codes")
    return codes is None or finding.code in {c.strip().upper() for c in codes.split(",")}


def _dedupe(findings: Iterable[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        # One finding per code and place: rules that see several input groups report the first,
        # which they order worst-first.
        key = (f.code, f.location.line, f.location.col, f.location.end_line, f.location.end_col)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def at_or_above(findings: Iterable[Finding], level: str) -> list[Finding]:
    """Findings whose severity is `level` or worse; `never` selects none."""
    if level == "never":
        return []
    return [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[level]]
