"""How good a verified candidate is: measured speedup over the initial kernel, or its estimate.

With timings, the score is the geometric mean over input groups of initial median / candidate median,
both from the same timing run; without a device, the candidate's predicted gain, labelled an estimate.
"""

from __future__ import annotations

from diagnose import scoring
from diagnose.scoring import geomean


def medians(verdict: dict, variant: str) -> dict[str, float]:
    """A variant's median per input group, from a verdict as a dict (`Verdict.to_dict()`)."""
    return {t["group"]: t["median_ms"] for t in verdict.get("timings", [])
            if t["variant"] == variant and t.get("median_ms")}


def speedups(verdict: dict, over: str) -> dict[str, float]:
    """Candidate over the `over` variant per group, both from the verdict's one timing run."""
    mine, base = medians(verdict, "candidate"), medians(verdict, over)
    return {g: base[g] / mine[g] for g in mine if g in base}


def measured_speedup(verdict: dict) -> float | None:
    """Geomean over groups of initial median / candidate median, or None when nothing was timed."""
    return geomean(speedups(verdict, "initial").values())


def spread(verdict: dict) -> float:
    """How far one timing run's medians can be off: over the groups, the widest half interquartile range
    relative to its median, of the candidate or the initial kernel (0 when nothing was timed)."""
    out = 0.0
    for t in verdict.get("timings", []):
        if t["variant"] in ("candidate", "initial") and t.get("median_ms") and t.get("iqr_ms") is not None:
            out = max(out, 0.5 * t["iqr_ms"] / t["median_ms"])
    return out


def score(result: dict) -> tuple[float, str]:
    """(score, how it was obtained) for a verified result; failed candidates score 0."""
    verdict = result["verdict"]
    return scoring.score(verdict["passed"], speedups(verdict, "initial").values(),
                         result["candidate"].get("predicted_gain"))
