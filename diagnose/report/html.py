"""The HTML rendering of an optimize run's report: one self-contained page (inline style and SVG, no
scripts, nothing fetched) with the outcome, the roofline plot, the escalation trace, the findings, the
evidence per source line with the line's text, and every candidate with its verdict and diff."""

from __future__ import annotations

import html

from diagnose.records import Report
from diagnose.report import run_view
from diagnose.report.roofline_plot import RooflinePlot, svg_for

STYLE = (
    "body{font-family:sans-serif;max-width:64em;margin:1em auto;padding:0 1em}"
    "pre{background:#f6f6f6;padding:6px;overflow:auto}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}.note{color:#555}"
    ".failed{color:#b00}.src{background:#f6f6f6;padding:1px 4px}figure{margin:0}svg{max-width:100%;height:auto}"
)


def e(text) -> str:
    return html.escape(str(text))


def roofline_section(plot: RooflinePlot, svg: str | None) -> str:
    figure = f"<figure class='roofline'>{svg}</figure>" if svg else ""
    return f"<h2>Roofline</h2><p class='note'>{e(plot.note)}</p>{figure}"


def evidence_section(report: Report) -> str:
    items = []
    for line in run_view.evidence_by_line(report):
        text = f" <code class='src'>{e(line.text.strip())}</code>" if line.text and line.text.strip() else ""
        evidence = "".join(f"<li>{e(run_view.describe(i))}</li>" for i in line.items)
        items.append(f"<li><b>{e(line.where)}</b>{text}<ul>{evidence}</ul></li>")
    return f"<h2>Evidence by source line</h2><ul>{''.join(items) or '<li>(none)</li>'}</ul>"


def candidates_section(report: Report) -> str:
    rows = run_view.candidate_rows(report)
    if not rows:
        return "<h2>Candidates</h2><p>(none proposed)</p>"
    head = "".join(f"<th>{h}</th>" for h in ("id", "rewrites", "answers", "safety", "verdict", "median", "speedup"))
    body = "".join(
        f"<tr><td>{e(r.id)}</td><td>{e(r.rewrites)}</td><td>{e(r.answers)}</td><td>{e(r.safety)}</td>"
        f"<td class='{'passed' if r.verdict == 'passed' else 'failed'}'>{e(r.verdict)}</td>"
        f"<td>{e(r.medians)}</td><td>{e(r.speedup)}</td></tr>"
        for r in rows
    )
    diffs = "".join(f"<h3>{e(r.id)}: {e(r.verdict)}</h3><pre>{e(r.diff) or '(no diff)'}</pre>" for r in rows)
    return f"<h2>Candidates</h2><table><tr>{head}</tr>{body}</table>{diffs}"


def render_html(report: Report, plot: RooflinePlot | None = None, svg: str | None = None) -> str:
    """The page; `plot` and `svg` as `roofline_plot.svg_for` returns them (drawn here when not given)."""
    if plot is None:
        plot, svg = svg_for(report)
    trace = "".join(f"<li><b>{e(s.level)}</b> {e(s.action)}: {e(s.reason)}</li>" for s in report.trace)
    findings = (
        "".join(f"<li><code>{e(f.code)}</code> line {f.location.line}: {e(f.message)}</li>" for f in report.findings)
        or "<li>(none)</li>"
    )
    name = report.module or report.task
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>diagnose optimize: "
        f"{e(name)}</title><style>{STYLE}</style></head><body>"
        f"<h1>diagnose optimize</h1><p>{e(name)}: target {e(report.target)}, device {e(report.device)}, "
        f"deepest level {e(report.deepest_level or '-')}</p>"
        f"<p><b>{e(run_view.outcome(report))}</b></p><p class='note'>{e(run_view.timing_note(report))}</p>"
        f"{roofline_section(plot, svg)}<h2>Escalation trace</h2><ol>{trace}</ol>"
        f"<h2>Findings</h2><ul>{findings}</ul>{evidence_section(report)}{candidates_section(report)}"
        "</body></html>\n"
    )
