"""The roofline plot of an optimize run, from its report alone (`diagnose/profiling/plot.py` draws it).

The report's `roofline` (a `Roofline` record) carries what the profile level counted: the work per input group (minimal
bytes, FLOPs), the roof, and the static estimate per group. The points are every timed variant of
the plotted groups: the initial kernel and the baselines (eager, torch.compile) from the task as given,
and every timed candidate under its id. When nothing was timed the points are the static estimates of
the kernel the profile level looked at, labelled estimates; with neither there is nothing to plot, and
the note says why.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from diagnose.profiling.plot import plot_roofline
from diagnose.profiling.roofline import RooflinePosition, position
from diagnose.records import Report, Roof, Timing, Work

SVG_NAME = "roofline.svg"


@dataclass(frozen=True)
class RooflinePlot:
    """The points of a run's roofline plot (label, position), its roof, and a sentence saying what they are."""

    roof: Roof | None
    points: tuple[tuple[str, RooflinePosition], ...]
    estimated: bool
    note: str


def timed_points(
    report: Report, work: dict[str, Work], roof: Roof, groups: list[str]
) -> list[tuple[str, RooflinePosition]]:
    """(label, position) for the initial kernel, the baselines and every timed candidate, in `groups`."""
    points: list[tuple[str, RooflinePosition]] = []
    seen: set[tuple[str, str]] = set()

    def add(label: str, variant: str, timing: Timing) -> None:
        group = timing.group
        if group in groups and timing.median_ms and (label, group) not in seen:
            seen.add((label, group))
            points.append((label, position(work[group], roof, timing.median_ms * 1e-3, variant)))

    given = [(True, report.baseline)] if report.baseline is not None else []
    for is_given, verdict in given + [(False, v) for _, v in report.candidates]:  # the task as given first
        for t in verdict.timings:
            if is_given and t.variant == "candidate":
                add("initial", "initial", t)
            elif t.variant in ("initial", "eager", "compile"):
                add(t.variant, t.variant, t)
    for candidate, verdict in report.candidates:
        for t in verdict.timings:
            if t.variant == "candidate":
                add(candidate.id, "candidate", t)
    return points


def roofline_plot(report: Report) -> RooflinePlot:
    data = report.roofline
    if data is None or not data.work or data.roof is None:
        return RooflinePlot(
            None,
            (),
            False,
            "Nothing to plot: the run has no roofline data (the profile level did not run, or it counted no work).",
        )
    roof = data.roof
    work = {w.group: w for w in data.work}
    groups = [data.group] if data.group in work else sorted(work)
    points = timed_points(report, work, roof, groups)
    if points:
        return RooflinePlot(
            roof,
            tuple(points),
            False,
            f"Measured medians on {report.device} against the {'measured' if roof.measured else 'nominal'} "
            f"roof, input group {', '.join(groups)}.",
        )
    label = f"{data.profiled or 'profiled kernel'} (estimate)"
    estimates = [
        (label, position(work[g], roof, ms * 1e-3, "estimate"))
        for g, ms in sorted(data.estimate_ms or ())
        if g in work and ms > 0
    ]
    if estimates:
        return RooflinePlot(
            roof,
            tuple(estimates),
            True,
            "Nothing was timed: the points are the static estimates of the profiled kernel, not measurements.",
        )
    return RooflinePlot(None, (), False, "Nothing was timed and there is no static estimate: nothing to plot.")


def write_svg(plot: RooflinePlot, folder: str | Path, title: str) -> Path | None:
    """Draw the plot into `<folder>/roofline.svg` (and `.png`); None when there is nothing to plot."""
    if not plot.points or plot.roof is None:
        return None
    paths = plot_roofline(
        list(plot.points),
        plot.roof,
        Path(folder) / Path(SVG_NAME).stem,
        title=f"{title} ({'estimated' if plot.estimated else 'measured'})",
    )
    return Path(next(p for p in paths if p.endswith(".svg")))


def inline_svg(path: str | Path) -> str:
    """The SVG file's `<svg>` element, without the XML prolog and doctype, for embedding in HTML."""
    text = Path(path).read_text()
    return re.sub(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", "", text, flags=re.DOTALL)


def svg_for(report: Report, folder: str | Path | None = None) -> tuple[RooflinePlot, str | None]:
    """The plot and its inline SVG, drawn into `folder` (a temporary one when None)."""
    plot = roofline_plot(report)
    title = Path(report.module or report.task).stem + f" on {report.target}"
    if folder is not None:
        path = write_svg(plot, folder, title)
        return plot, inline_svg(path) if path else None
    with tempfile.TemporaryDirectory(prefix="diagnose-plot-") as tmp:
        path = write_svg(plot, tmp, title)
        return plot, inline_svg(path) if path else None
