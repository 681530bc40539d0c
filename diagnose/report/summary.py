"""The summary table printed at the end of `diagnose optimize`: one row per candidate, from the report."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from diagnose.records import Report
from diagnose.report import run_view


def candidates_table(report: Report) -> Table:
    timed = run_view.timed(report)
    table = Table(
        title="candidates" + ("" if timed else " (nothing timed: speedups are estimates)"), title_justify="left"
    )
    for column in ("id", "rewrites", "answers", "verdict", "median", "speedup"):
        table.add_column(column, overflow="fold")  # a narrow terminal folds a cell, never cuts it
    for row in run_view.candidate_rows(report):
        best = ", best" if row.id == report.best else ""
        table.add_row(row.id, row.rewrites, row.answers, row.verdict + best, row.medians, row.speedup)
    if not report.candidates:
        table.caption = "no candidate was proposed"
    return table


def summary_text(report: Report, width: int = 160) -> str:
    """The table as plain text (no colour), as a log or a test reads it."""
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(candidates_table(report))
    return console.export_text()
