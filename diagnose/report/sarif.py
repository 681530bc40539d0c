"""SARIF 2.1.0 for an optimize run's findings, whatever level made them.

Triage findings (`TRI…`) go through `diagnose/triage/sarif.py` unchanged (rule descriptors from the rules'
docstrings, line-hash fingerprints); findings of other levels (the profiling codes `PRF…`, and any code
no table knows) are added to the same run, with descriptors from `diagnose/profiling/codes.py` or a
minimal one, so one file carries everything the run found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from diagnose.profiling.codes import CODES as PROFILE_CODES
from diagnose.records import Finding, Report
from diagnose.triage.codes import RULES
from diagnose.triage.sarif import LEVEL, _line_hash, _location, render_sarif


def descriptor(code: str, severity: str) -> dict[str, Any]:
    spec = PROFILE_CODES.get(code)
    if spec is None:
        return {"id": code, "shortDescription": {"text": code}, "defaultConfiguration": {"level": LEVEL[severity]}}
    return {
        "id": code,
        "name": spec.name,
        "shortDescription": {"text": spec.title},
        "help": {"text": spec.fix_title},
        "defaultConfiguration": {"level": LEVEL[spec.severity]},
        "properties": {"tags": ["performance", "profile"]},
    }


def result(f: Finding, index: int, source: str, root: str, seen: dict[tuple[str, str], int]) -> dict[str, Any]:
    line_hash = _line_hash(f, source)
    key = (f.location.path, line_hash)
    seen[key] = seen.get(key, 0) + 1
    return {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": LEVEL[f.severity],
        "message": {"text": f.message},
        "locations": [_location(f.location, root)],
        "partialFingerprints": {"primaryLocationLineHash": f"{line_hash}:{seen[key]}"},
        "properties": {"confidence": f.confidence},
    }


def report_sarif(report: Report, root: str | Path) -> dict[str, Any]:
    """The SARIF log of a run's findings; URIs relative to `root` where they lie under it."""
    findings = list(report.findings)
    sources = {}
    for path in {f.location.path for f in findings}:
        try:
            sources[path] = Path(path).read_text()
        except (OSError, UnicodeDecodeError):
            pass  # an unreadable source only loses the snippet; the result still stands
    log = render_sarif([f for f in findings if f.code in RULES], sources, str(root))
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    seen: dict[tuple[str, str], int] = {}
    for f in findings:
        if f.code in RULES:
            continue
        if f.code not in index:
            index[f.code] = len(rules)
            rules.append(descriptor(f.code, f.severity))
        run["results"].append(result(f, index[f.code], sources.get(f.location.path, ""), str(root), seen))
    return log
