"""The Markdown rendering of an optimize run's report: the HTML page's sections, with the roofline plot
as a link to the SVG file in the run folder instead of inline."""

from __future__ import annotations

from diagnose.records import Report
from diagnose.report import run_view
from diagnose.report.roofline_plot import SVG_NAME, roofline_plot


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report, plot_link: str | None = None) -> str:
    """`plot_link`: where the roofline SVG was written (relative to the Markdown file), None when it was not."""
    plot = roofline_plot(report)
    out = [
        f"# diagnose optimize: {report.module or report.task}",
        "",
        f"target {report.target}, device {report.device}, deepest level {report.deepest_level or '-'}"
        + (f", wall time {report.wall_s:g} s" if report.wall_s is not None else ""),
        "",
        run_view.outcome(report),
        "",
        run_view.timing_note(report),
        "",
        "## Roofline",
        "",
        plot.note,
        "",
    ]
    if plot.points and plot_link:
        out += [f"![roofline]({plot_link})", ""]
    elif plot.points:
        out += [f"(the plot is `{SVG_NAME}` in the run folder, and inline in `report.html`)", ""]
    out += ["## Escalation trace", ""]
    out += [f"{i}. **{s.level}** {s.action}: {s.reason}" for i, s in enumerate(report.trace, 1)]
    out += ["", "## Findings", ""]
    out += [f"- `{f.code}` line {f.location.line}: {f.message}" for f in report.findings] or ["(none)"]
    out += ["", "## Evidence by source line", ""]
    for line in run_view.evidence_by_line(report):
        out.append(f"- {line.where}" + (f": `{line.text.strip()}`" if line.text and line.text.strip() else ""))
        out += [f"  - {run_view.describe(i)}" for i in line.items]
    out += ["", "## Candidates", ""]
    rows = run_view.candidate_rows(report)
    if not rows:
        out.append("(none proposed)")
    else:
        out += ["| id | rewrites | answers | safety | verdict | median | speedup |", "|---|---|---|---|---|---|---|"]
        out += [
            f"| {cell(r.id)} | {cell(r.rewrites)} | {cell(r.answers)} | {r.safety} | {cell(r.verdict)} | {cell(r.medians)} | {r.speedup} |"
            for r in rows
        ]
    for r in rows:
        out += ["", f"### {r.id}: {r.verdict}", "", "```diff", r.diff.rstrip("\n") or "(no diff)", "```"]
    return "\n".join(out) + "\n"
