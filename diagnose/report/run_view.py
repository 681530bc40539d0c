"""What an optimize run's `Report` says, section by section, for its renderers (`report.json` is its JSON).

`markdown.py` and `html.py` render these sections; the summary table (`summary.py`) reads the same rows.
Sections: the outcome (best candidate, speedup and how it was obtained), whether anything was timed, the
escalation trace, the findings, the evidence per source line with that line's text, and every candidate
with its verdict.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from diagnose.records import Candidate, Evidence, Report, Verdict
from diagnose.report.scores import score

EVIDENCE_PER_LINE = 8


@dataclass(frozen=True)
class SourceLine:
    """One source line that evidence points at: where, its text (when the file is readable), the evidence."""

    path: str
    line: int
    text: str | None
    items: tuple[Evidence, ...]

    @property
    def where(self) -> str:
        return f"{Path(self.path).name}:{self.line}"


@dataclass(frozen=True)
class CandidateRow:
    """One verified candidate as the tables show it."""

    id: str
    rewrites: str
    safety: str
    verdict: str
    medians: str  # the candidate's median per timed group, or "not timed"
    speedup: str  # "1.52x" measured, "2.13x (estimate)" without timings, "-" when it failed
    diff: str
    answers: str = "-"  # the findings and IR evidence it answers (`CODE@file:line`), "-" when none


def outcome(report: Report) -> str:
    best = report.best_entry
    if best is None:
        if not report.candidates:
            return "No rewrite was proposed; the task stays as given."
        if any(v.passed for _, v in report.candidates):
            return "No verified candidate beat the task as given; the task stays as given."
        return "No candidate passed verification; the task stays as given."
    candidate, verdict = best
    value, how = score(candidate, verdict)
    made = ", ".join(candidate.made_by)
    if candidate.repairs:
        return f"Best: `{candidate.id}` ({made}): a repair: {candidate.repairs}; this candidate compiles and passed."
    return f"Best: `{candidate.id}` ({made}): {value:.2f}x over the initial kernel, {how}."


def verdicts(report: Report) -> list[Verdict]:
    return ([report.baseline] if report.baseline is not None else []) + [v for _, v in report.candidates]


def timed(report: Report) -> bool:
    """Whether anything in the run (the task as given or a candidate) was timed on a device."""
    return any(t.median_ms for v in verdicts(report) for t in v.timings)


def timing_note(report: Report) -> str:
    if timed(report):
        return (
            f"Timed on {report.device}: speedups are ratios of medians measured with one protocol "
            "(the baselines in a worker of their own)."
        )
    return (
        f"Nothing was timed (device {report.device}): candidates are ranked by the static estimate, "
        "and every gain shown is an estimate."
    )


def source_text(path: str, line: int, files: dict[str, list[str] | None]) -> str | None:
    """The text of `path:line`, reading each file once (`files` caches them); None when it cannot be read."""
    if path not in files:
        try:
            files[path] = Path(path).read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            files[path] = None
    lines = files[path]
    return lines[line - 1].rstrip() if lines and 0 < line <= len(lines) else None


def evidence_by_line(report: Report) -> list[SourceLine]:
    """The run's evidence (its own and its findings'), grouped by source line, each line with its text."""
    grouped: dict[tuple[str, int], list[Evidence]] = defaultdict(list)
    for item in [*report.evidence, *(e for f in report.findings for e in f.evidence)]:
        where = item.location
        if where and item not in grouped[(where.path, where.line)]:
            grouped[(where.path, where.line)].append(item)
    files: dict[str, list[str] | None] = {}
    return [
        SourceLine(path, line, source_text(path, line, files), tuple(items[:EVIDENCE_PER_LINE]))
        for (path, line), items in sorted(grouped.items())
    ]


def describe(item: Evidence) -> str:
    args = ", ".join(f"{k}={v}" for k, v in item.args)
    return f"{item.kind} {item.name} [{item.source}]" + (f" ({args})" if args else "")


def verdict_text(verdict: Verdict) -> str:
    if verdict.passed:
        return "passed"
    why = [x.name for x in verdict.checks if not x.passed]
    if verdict.failure is not None:
        why.append(verdict.failure.kind)
    return "failed: " + ("; ".join(why) or "incorrect output")


def candidate_row(candidate: Candidate, verdict: Verdict) -> CandidateRow:
    mine = [t for t in verdict.timings if t.variant == "candidate" and t.median_ms]
    several = len({t.group for t in mine}) > 1
    medians = [f"{t.median_ms:.4g} ms" + (f" [{t.group}]" if several else "") for t in mine]
    value, how = score(candidate, verdict)
    if not verdict.passed:
        speedup = "-"
    elif how == "measured":
        speedup = f"{value:.2f}x"
    else:
        speedup = f"{value:.2f}x (estimate)"
    return CandidateRow(
        candidate.id,
        ", ".join(candidate.made_by),
        candidate.safety,
        verdict_text(verdict),
        ", ".join(medians) or "not timed",
        speedup,
        candidate.diff,
        ", ".join(candidate.answers) or "-",
    )


def candidate_rows(report: Report) -> list[CandidateRow]:
    return [candidate_row(c, v) for c, v in report.candidates]
