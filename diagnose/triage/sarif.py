"""SARIF 2.1.0 output that GitHub code scanning accepts: one run, a rule descriptor per code (from
the rule's docstring), repo-relative URIs under `%SRCROOT%`, 1-based columns, and a
`primaryLocationLineHash` fingerprint that survives lines moving up or down."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import diagnose
from diagnose.records import Finding, Location
from diagnose.triage.codes import RULES
from diagnose.triage.context import source_lines

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
# Where the rule documentation lives; the integrator should point this at the published docs.
INFORMATION_URI = "https://github.com/diagnose-project/diagnose/blob/main/diagnose/triage/README.md"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render_sarif(findings: list[Finding], sources: dict[str, str], root: str) -> dict[str, Any]:
    codes = sorted({f.code for f in findings} | set(RULES), key=list(RULES).index)
    index = {code: i for i, code in enumerate(codes)}
    seen: dict[tuple[str, str], int] = {}
    results = []
    for f in findings:
        line_hash = _line_hash(f, sources.get(f.location.path, ""))
        key = (f.location.path, line_hash)
        seen[key] = seen.get(key, 0) + 1
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [_location(f.location, root)],
            "partialFingerprints": {"primaryLocationLineHash": f"{line_hash}:{seen[key]}"},
            "properties": {"confidence": f.confidence},
        }
        if f.secondary:
            result["relatedLocations"] = [
                {"id": i, **_location(loc, root), "message": {"text": "related"}}
                for i, loc in enumerate(f.secondary, 1)
            ]
        results.append(result)
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "diagnose",
                        "semanticVersion": diagnose.__version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_descriptor(code) for code in codes],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(root).resolve().as_uri() + "/"}},
                "results": results,
            }
        ],
    }


def _descriptor(code: str) -> dict[str, Any]:
    rule = RULES[code]
    sections = rule.sections()
    full = " ".join(" ".join(sections.get(s, "").split()) for s in ("What it finds", "Why it is slow"))
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": full or rule.summary()},
        "help": {"text": rule.doc(), "markdown": rule.doc()},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": ["performance", *rule.targets], "precision": rule.confidence},
    }


def _location(loc: Location, root: str) -> dict[str, Any]:
    region = {"startLine": loc.line, "startColumn": loc.col + 1}
    if loc.end_line is not None:
        region["endLine"] = loc.end_line
        if loc.end_col is not None:
            region["endColumn"] = loc.end_col + 1
    return {"physicalLocation": {"artifactLocation": _artifact(loc.path, root), "region": region}}


def _artifact(path: str, root: str) -> dict[str, str]:
    absolute = Path(path).resolve()
    try:
        rel = absolute.relative_to(Path(root).resolve())
    except ValueError:  # outside the root: an absolute URI, no base
        return {"uri": absolute.as_uri()}
    return {"uri": rel.as_posix(), "uriBaseId": "%SRCROOT%"}


def _line_hash(f: Finding, source: str) -> str:
    """Hash of the rule and the flagged line's text without whitespace: stable when lines move."""
    lines = source_lines(source)
    text = lines[f.location.line - 1] if 0 < f.location.line <= len(lines) else ""
    digest = hashlib.sha256(f"{f.code}\0{''.join(text.split())}".encode()).hexdigest()
    return digest[:16]
