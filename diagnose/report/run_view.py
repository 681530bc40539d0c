"""Markdown and self-contained HTML renderings of an optimize run's report (the JSON is the source of truth).

Sections: the outcome (best candidate, speedup and how it was obtained), the escalation trace with the
reason of every decision, findings, the evidence per source line, and every candidate with its verdict.
"""

from __future__ import annotations

import html
from collections import defaultdict

from diagnose.report.scores import score


def outcome(report: dict) -> str:
    best = next((c for c in report["candidates"] if c["candidate"]["id"] == report["best"]), None)
    if best is None:
        return "No candidate passed verification; the task stays as given."
    value, how = score({**best, "path": ""})
    made = ", ".join(best["candidate"]["made_by"])
    return f"Best: `{best['candidate']['id']}` ({made}): {value:.2f}x over the initial kernel, {how}."


def evidence_by_line(report: dict) -> dict[tuple[str, int], list[dict]]:
    lines = defaultdict(list)
    for item in report.get("evidence", []) + [e for f in report["findings"] for e in f["evidence"]]:
        where = item.get("location")
        if where:
            lines[(where["path"], where["line"])].append(item)
    return dict(sorted(lines.items()))


def describe(item: dict) -> str:
    args = ", ".join(f"{k}={v}" for k, v in item.get("args", []))
    return f"{item['kind']} {item['name']} [{item['source']}]" + (f" ({args})" if args else "")


def render_markdown(report: dict) -> str:
    out = [f"# diagnose optimize: {report['task']}", "", f"target {report['target']}, device {report['device']}", "",
           outcome(report), "", "## Escalation trace", ""]
    out += [f"{i}. **{s['level']}** {s['action']}: {s['reason']}" for i, s in enumerate(report["trace"], 1)]
    out += ["", "## Findings", ""]
    out += [f"- `{f['code']}` line {f['location']['line']}: {f['message']}" for f in report["findings"]] or ["(none)"]
    out += ["", "## Evidence by source line", ""]
    for (path, line), items in evidence_by_line(report).items():
        out.append(f"- {path.rsplit('/', 1)[-1]}:{line}")
        out += [f"  - {describe(i)}" for i in items[:8]]
    out += ["", "## Candidates", "", "| id | made by | safety | verdict | score |", "|---|---|---|---|---|"]
    for c in report["candidates"]:
        value, how = score({**c, "path": ""})
        verdict = "passed" if c["verdict"]["passed"] else "failed: " + "; ".join(
            [x["name"] for x in c["verdict"]["checks"] if not x["passed"]] + ([c["verdict"]["failure"]["kind"]] if c["verdict"]["failure"] else []))
        out.append(f"| {c['candidate']['id']} | {', '.join(c['candidate']['made_by'])} | {c['candidate']['safety']} "
                   f"| {verdict} | {value:.2f}x {how} |")
    return "\n".join(out) + "\n"


def render_html(report: dict) -> str:
    """One self-contained page: the Markdown's content as HTML, diffs in <pre>."""
    e = html.escape
    trace = "".join(f"<li><b>{e(s['level'])}</b> {e(s['action'])}: {e(s['reason'])}</li>" for s in report["trace"])
    findings = "".join(f"<li><code>{e(f['code'])}</code> line {f['location']['line']}: {e(f['message'])}</li>"
                       for f in report["findings"]) or "<li>(none)</li>"
    lines = "".join(
        f"<li>{e(path.rsplit('/', 1)[-1])}:{line}<ul>" + "".join(f"<li>{e(describe(i))}</li>" for i in items[:8]) + "</ul></li>"
        for (path, line), items in evidence_by_line(report).items())
    candidates = "".join(
        f"<h3>{e(c['candidate']['id'])} — {'passed' if c['verdict']['passed'] else 'failed'}</h3>"
        f"<p>{e(', '.join(c['candidate']['made_by']))}; {e(c['candidate']['safety'])}</p>"
        f"<pre>{e(c['candidate']['diff'])}</pre>" for c in report["candidates"])
    return ("<!doctype html><html><head><meta charset='utf-8'><title>diagnose optimize</title>"
            "<style>body{font-family:sans-serif;max-width:60em}pre{background:#f6f6f6;padding:6px;overflow:auto}</style>"
            f"</head><body><h1>diagnose optimize</h1><p>{e(report['task'])}: target {e(report['target'])}, "
            f"device {e(report['device'])}</p><p>{e(outcome(report))}</p><h2>Escalation trace</h2><ol>{trace}</ol>"
            f"<h2>Findings</h2><ul>{findings}</ul><h2>Evidence by source line</h2><ul>{lines}</ul>"
            f"<h2>Candidates</h2>{candidates}</body></html>\n")
