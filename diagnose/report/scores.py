"""How good a verified candidate is: measured speedup over the initial kernel, or its estimate.

With timings, the score is the geometric mean over input groups of initial median / candidate median,
both timed with the harness's protocol on one device; without a device, the candidate's predicted gain, labelled an estimate
(`diagnose/scoring.py` has the rule). Everything here reads records (`Verdict`, `Candidate`).
"""

from __future__ import annotations

from diagnose import scoring
from diagnose.records import Candidate, Verdict
from diagnose.scoring import geomean


def medians(verdict: Verdict, variant: str) -> dict[str, float]:
    """A variant's median per input group (groups not timed are left out)."""
    return {t.group: t.median_ms for t in verdict.timings if t.variant == variant and t.median_ms}


def speedups(verdict: Verdict, over: str) -> dict[str, float]:
    """Candidate over the `over` variant per group, both from the verdict's one timing run."""
    mine, base = medians(verdict, "candidate"), medians(verdict, over)
    return {g: base[g] / mine[g] for g in mine if g in base}


def measured_speedup(verdict: Verdict) -> float | None:
    """Geomean over groups of initial median / candidate median, or None when nothing was timed."""
    return geomean(speedups(verdict, "initial").values())


def spread(verdict: Verdict) -> float:
    """How far one timing run's medians can be off: over the groups, the widest half interquartile range
    relative to its median, of the candidate or the initial kernel (0 when nothing was timed)."""
    out = 0.0
    for t in verdict.timings:
        if t.variant in ("candidate", "initial") and t.median_ms and t.iqr_ms is not None:
            out = max(out, 0.5 * t.iqr_ms / t.median_ms)
    return out


def score(candidate: Candidate, verdict: Verdict) -> tuple[float, str]:
    """(score, how it was obtained) for a verified candidate; failed candidates score 0."""
    return scoring.candidate_score(candidate, verdict)
