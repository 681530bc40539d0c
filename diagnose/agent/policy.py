"""The escalation policy, in one place: when to go one level deeper, when to stop, which candidate is best.

Stop at once when the task as given does not run (`broken_task`). Go one level deeper when the
evidence so far yields no untried candidate (the proposer returned nothing new), or after a round of
verification whose best result fell short of its prediction; stop when the best candidate (before
any, the task as given) is within `roofline_fraction` of the roofline bound on every input group
(then nothing more is proposed), when the budget is spent (candidates verified, wall time), or when
the deepest level has been reached and nothing is left to try. A candidate that only applies again the
codemods that made its base is not proposed (`repeats_lineage`). Every decision comes with its reason,
which the node writes into the trace.

Ranking uses `diagnose/report/scores.py`: measured speedup over the initial kernel where timed, the
predicted gain (an estimate, said so) where not. The state holds results as dicts; they are scored as
records (`score`, `baseline_of`).
"""

from __future__ import annotations

import time

from diagnose.agent.state import LEVELS, Budget, State
from diagnose.records import Roofline, Verdict, candidate_from_dict, roofline_from_dict, verdict_from_dict
from diagnose.report import scores

# The exception types of a Triton kernel that does not compile, as a failure's message names them.
KERNEL_ERRORS = ("CompilationError", "InterpreterError", "UnsupportedLanguageConstruct")

# The smallest measured gain worth a patch (as `diagnose.optimizer.search.MEASURED_TIE` is for a config).
MIN_GAIN = 0.02

LEVEL_NODES = {"profile": "profile", "ir": "inspect_ir", "passes": "analyze_passes"}


def score(result: dict) -> tuple[float, str]:
    """(score, how it was obtained) of a result in the state (`{"candidate", "verdict", "path"}`), scored
    on its records by `diagnose/report/scores.py`."""
    return scores.score(candidate_from_dict(result["candidate"]), verdict_from_dict(result["verdict"]))


def baseline_of(state: State) -> Verdict | None:
    """The verdict of the task as given, once measured."""
    baseline = state.get("baseline")
    return verdict_from_dict(baseline) if baseline else None


def broken_task(baseline: Verdict | None, repaired: bool | None = None) -> str | None:
    """Why the task as given cannot be optimized, when its own code raised, crashed or hung in the
    baseline's verification (the verdict's `failure`); else None. A rewrite of a kernel that does not
    run cannot be verified against it, so the run finishes there, and the user's code is to blame (the
    command line exits 2), not the rewrites (a run where none helped exits 0). A kernel that does
    not compile (`repairable`) is the exception: a rewrite may repair it and is verified against the
    task's reference, so the run goes on (`repaired` None: not known yet) and ends broken only if no
    candidate passed (`repaired` False)."""
    failure = baseline.failure if baseline is not None else None
    if failure is None or (repairable(baseline) and repaired is not False):
        return None
    lines = (failure.message or "").strip().splitlines()
    return f"the task as given does not run: {lines[0] if lines else 'no message'} ({failure.kind})"


def repairable(baseline: Verdict | None) -> str | None:
    """What the task as given fails with, where that is its Triton kernel not compiling (Triton's
    `CompilationError`, or the interpreter's `InterpreterError` for a construct it rejects too: a block
    size that is not `tl.constexpr`); else None. Host code that raises is not a kernel's to repair."""
    failure = baseline.failure if baseline is not None else None
    if failure is None or failure.kind != "exception":
        return None
    message = (failure.message or "").strip()
    if not any(kind in message for kind in KERNEL_ERRORS):
        return None
    return f"the task as given does not run: {message.splitlines()[0][:200]}"


def best_result(results: list[dict]) -> dict | None:
    """The passed result that scores highest, if it beats the task as given: a measured speedup above
    1, or, where nothing was timed, a predicted gain above 1 by `MIN_GAIN`. A candidate timed slower
    than the initial kernel is never the best, even when it is the only one that passed: it is a
    regression, not a result. Nor is one with no gain to show: a patch estimated at 1.00x (such as
    `num_warps=4` added where 4 is already Triton's default) changes nothing. A measured gain must
    also clear `margin`. A repair (`Candidate.repairs`: the task as given does not compile for the
    target, the candidate does) is better than the task as given at any score, and ranks first."""
    scored = [(score(r), r) for r in results if r["verdict"]["passed"]]
    gains = [(value if value > 1.0 + margin(r, how) else 1.0, r) for (value, how), r in scored]
    better = [(value, r) for value, r in gains if value > 1.0 or repairs(r)]
    return max(better, key=lambda pair: (repairs(pair[1]), pair[0]))[1] if better else None


def repairs(result: dict) -> bool:
    """Whether the result's candidate compiles for the target where the task as given does not."""
    return bool(result["candidate"].get("repairs"))


def margin(result: dict, how: str) -> float:
    """How much a speedup must exceed 1 to count: `MIN_GAIN`, or for a measured one the timing run's own
    spread where it is wider (`scores.spread`); a source edit for a gain inside the noise is not a
    result, nor one estimated at 1.00x (an estimate of 1.004 once picked a patch on the CPU)."""
    return max(MIN_GAIN, scores.spread(verdict_from_dict(result["verdict"]))) if how == "measured" else MIN_GAIN


def base_repairs(state: State) -> str | None:
    """The failure of the task as given that a candidate built on the current base repairs: the base's
    own (a repair: every candidate built on it repairs it too), else the task's where it does not run
    for its kernel's compile error (`repairable`: a candidate that passes is a repair)."""
    best = next((r for r in state.get("results", []) if r["candidate"]["id"] == state.get("best")), None)
    if best is not None:
        return best["candidate"].get("repairs")
    return repairable(baseline_of(state))


def base_timings(state: State) -> list[dict]:
    """The timings taken when the current base was verified: the best candidate's verdict's, else the
    task as given's (its baseline's); none before either."""
    best = next((r for r in state.get("results", []) if r["candidate"]["id"] == state.get("best")), None)
    verdict = best["verdict"] if best is not None else state.get("baseline") or {}
    return list(verdict.get("timings") or [])


def base_lineage(state: State) -> list[str]:
    """The rewrites that made the current base: none for the task as given, else the best candidate's
    whole chain (`lineage`, set by the propose node; `made_by` for a candidate without one)."""
    best = next((r for r in state.get("results", []) if r["candidate"]["id"] == state.get("best")), None)
    return list(best["candidate"].get("lineage") or best["candidate"]["made_by"]) if best else []


def repeats_lineage(candidate: dict, lineage: list[str]) -> bool:
    """Whether a candidate only applies again codemods that already made its base: a tunable rewrite
    searched its space the first time, so a second pass re-ranks the same space and can only cost a
    verification (tile searches applied to their own output measured below the first pass). The LLM
    proposer (`llm:<model>`) may refine its own output."""
    made = candidate.get("made_by") or []
    return bool(made) and all(m in lineage and not m.startswith("llm:") for m in made)


def stop_reason(state: State, budget: Budget, now: float | None = None) -> str | None:
    now = time.time() if now is None else now
    results = state.get("results", [])
    if len(results) >= budget.max_candidates:
        return f"budget spent: {len(results)} candidates verified (limit {budget.max_candidates})"
    if now - state.get("started", now) > budget.max_wall_s:
        return f"budget spent: wall time over {budget.max_wall_s:g} s"
    return near_roofline(state, budget)


def near_roofline(state: State, budget: Budget) -> str | None:
    """Why nothing is left to gain, when the best candidate (or, before any, the task as given) is within
    `roofline_fraction` of the bound on every input group the profile bounded; else None."""
    best = best_result(state.get("results", []))
    measured = verdict_from_dict(best["verdict"]) if best else baseline_of(state)
    fractions = roofline_fractions(roofline_from_dict(state.get("roofline")), measured)
    if fractions and min(fractions.values()) >= budget.roofline_fraction:
        farthest = min(fractions, key=fractions.get)
        where = f" on every input group (farthest: {farthest})" if len(fractions) > 1 else ""
        who = "best candidate" if best else "the task as given"
        return f"{who} reaches {fractions[farthest]:.0%} of the roofline bound{where}"
    return None


def roofline_bounds(roofline: dict | None) -> dict[str, float]:
    """The roofline bound (ms) per input group of a roofline's JSON (`Roofline.bounds`)."""
    record = roofline_from_dict(roofline)
    return record.bounds if record is not None else {}


def roofline_fractions(roofline: Roofline | None, verdict: Verdict | None) -> dict[str, float]:
    """Bound over measured median, per input group with both."""
    if roofline is None or verdict is None:
        return {}
    medians = scores.medians(verdict, "candidate")
    return {group: bound / medians[group] for group, bound in roofline.bounds.items() if medians.get(group)}


def escalation(state: State, budget: Budget, now: float | None = None) -> tuple[str, str]:
    """Where to go when the proposer had nothing new: the next level's node, or finish."""
    reason = stop_reason(state, budget, now)
    if reason:
        return "finish", reason
    level = state.get("level", 0)
    if level + 1 >= len(LEVELS):
        return "finish", f"deepest level ({LEVELS[level]}) reached and no untried candidate is left"
    deeper = LEVELS[level + 1]
    return LEVEL_NODES[deeper], f"no untried candidate from the evidence up to {LEVELS[level]}: go to {deeper}"


def after_verify(state: State, budget: Budget, now: float | None = None) -> tuple[str, str]:
    """After a round of verification: stop, or ask the proposer again (it escalates if nothing is new)."""
    reason = stop_reason(state, budget, now)
    if reason:
        return "finish", reason
    best = best_result(state.get("results", []))
    if best is None:
        return "propose", "no candidate passed verification and beat the task as given yet"
    value, how = score(best)
    predicted = best["candidate"].get("predicted_gain")
    if how == "measured" and predicted and value < predicted:
        return (
            "propose",
            f"best {best['candidate']['id']} measured {value:.2f}x, short of its predicted {predicted:.2f}x",
        )
    return "propose", f"best so far {best['candidate']['id']}: {value:.2f}x ({how})"
