"""How a verified candidate is scored, and the one geometric mean every table uses.

A candidate's score is its measured speedup over the initial kernel, the geometric mean over the
input groups of ratios of medians timed with one protocol on one device (each group counts the same,
whatever its size); where nothing was timed (the CPU interpreter), the static estimate's predicted
gain, labelled as such; a candidate that failed verification scores 0.

    >>> geomean([2.0, 8.0])
    4.0
    >>> score(True, [2.0, 8.0], None)
    (4.0, 'measured')
    >>> score(True, [], 1.5)
    (1.5, 'estimated (nothing timed)')
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from diagnose.records import Candidate, Verdict


def geomean(values: Iterable[float]) -> float | None:
    """The geometric mean of the positive values (None when there are none)."""
    logs = [math.log(v) for v in values if v > 0]
    return math.exp(math.fsum(logs) / len(logs)) if logs else None


def score(passed: bool, speedups: Iterable[float], predicted_gain: float | None) -> tuple[float, str]:
    """(score, how it was obtained): measured where timed, else the estimate (1.0 without one)."""
    if not passed:
        return 0.0, "failed verification"
    measured = geomean(speedups)
    if measured is not None:
        return measured, "measured"
    return float(predicted_gain or 1.0), "estimated (nothing timed)"


def candidate_score(candidate: Candidate, verdict: Verdict) -> tuple[float, str]:
    """`score` of a candidate and its verdict: the speedup over the initial kernel measured in the verdict's
    timing run (`Verdict.speedups`), else the candidate's predicted gain. The optimizer ranks by it and
    the report shows it."""
    return score(verdict.passed, verdict.speedups("initial").values(), candidate.predicted_gain)
