"""The files a finished optimize run leaves in its folder: `report.json` (the source of truth), the roofline
plot (`roofline.svg` and `.png`, when there is something to plot), `report.md` (linking the plot) and the
self-contained `report.html` (the plot inline)."""

from __future__ import annotations

import json
from pathlib import Path

from diagnose.records import Report
from diagnose.report.html import render_html
from diagnose.report.markdown import render_markdown
from diagnose.report.roofline_plot import SVG_NAME, svg_for


def write_report_files(report: Report, folder: str | Path) -> list[Path]:
    """Write every rendering of `report` into `folder`; the paths written, JSON first (`Report.to_dict()`)."""
    folder = Path(folder)
    written = [folder / "report.json"]
    written[0].write_text(json.dumps(report.to_dict(), indent=2))
    plot, svg = svg_for(report, folder)
    if svg is not None:
        written.append(folder / SVG_NAME)
    (folder / "report.md").write_text(render_markdown(report, SVG_NAME if svg is not None else None))
    (folder / "report.html").write_text(render_html(report, plot, svg))
    return written + [folder / "report.md", folder / "report.html"]
