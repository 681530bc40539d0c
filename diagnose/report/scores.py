"""How good a verified candidate is: measured speedup over the initial kernel, or its estimate.

With timings, the score is the geometric mean over input groups of initial median / candidate median,
both from the same timing run; without a device, the candidate's predicted gain, labelled an estimate.
"""

from __future__ import annotations

import math


def measured_speedup(verdict: dict) -> float | None:
    """Geomean over groups of initial median / candidate median, or None when nothing was timed."""
    ratios = []
    timings = verdict.get("timings", [])
    for t in timings:
        if t["variant"] != "candidate" or not t.get("median_ms"):
            continue
        initial = next((b for b in timings if b["variant"] == "initial" and b["group"] == t["group"]), None)
        if initial and initial.get("median_ms"):
            ratios.append(initial["median_ms"] / t["median_ms"])
    return math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None


def score(result: dict) -> tuple[float, str]:
    """(score, how it was obtained) for a verified result; failed candidates score 0."""
    if not result["verdict"]["passed"]:
        return 0.0, "failed verification"
    measured = measured_speedup(result["verdict"])
    if measured is not None:
        return measured, "measured"
    return float(result["candidate"].get("predicted_gain") or 1.0), "estimated (nothing timed)"
