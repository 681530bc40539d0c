"""The agent's nodes: small functions named by verbs, each returning the part of the state it changes.

Nodes call the layers through `Context.tools` (see `diagnose/agent/tools.py`), so they know nothing of
how triage, the IR layer, profiling, rewrites or the harness work, and the policy decides in
`diagnose/agent/policy.py`. Every decision lands in the trace with its reason.
"""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from diagnose.agent import policy
from diagnose.agent.state import KEPT, LEVELS, Context, State
from diagnose.errors import DiagnoseError

# A propose step that found nothing says why the rewrites answering its findings declined: the first few.
DECLINES = 4
DECLINE_CHARS = 160


def step(level: str, action: str, reason: str) -> dict:
    """One line of the run's trace; `at` (epoch seconds, when the step ended) shows where the time went."""
    return {"level": level, "action": action, "reason": reason, "at": round(time.time(), 1)}


def measure_baseline(state: State, runtime: Runtime[Context]) -> dict:
    verdict = runtime.context.tools.verify_task(state["task"], state["device"], state["target"])
    timed = any(t.get("median_ms") for t in verdict["timings"])
    how = "timed on the device" if timed else "not timed (no device): ranking will use the static estimate"
    return {
        "baseline": verdict,
        "base": state["task"],
        "level": -1,
        "started": state.get("started") or time.time(),
        "trace": [step("baseline", "verify the task as given", f"passed={verdict['passed']}; {how}")],
    }


def triage(state: State, runtime: Runtime[Context]) -> dict:
    findings = runtime.context.tools.triage(state["base"], state["target"])
    return {
        "findings": findings,
        "level": 0,
        "trace": [
            step(
                "triage",
                "run source rules",
                f"{len(findings)} findings: " + ", ".join(sorted({f["code"] for f in findings}))
                if findings
                else "no findings",
            )
        ],
    }


def profile(state: State, runtime: Runtime[Context]) -> dict:
    findings, evidence, roofline, note = runtime.context.tools.profile(
        state["base"], state["device"], state["target"], policy.base_timings(state)
    )
    return {
        "findings": findings,
        "evidence": evidence,
        "roofline": roofline,
        "level": 1,
        "trace": [step("profile", "roofline and bottleneck", note)],
    }


def unavailable(level: str, index: int, action: str, error: DiagnoseError) -> dict:
    """A level whose toolchain is missing here: say so in the trace and let the policy go on."""
    return {"level": index, "trace": [step(level, action, f"not available here: {error}")]}


def inspect_ir(state: State, runtime: Runtime[Context]) -> dict:
    try:
        evidence, errors = runtime.context.tools.inspect_with_errors(state["base"], state["target"], deep=False)
    except DiagnoseError as error:
        return unavailable("ir", 2, f"compile offline for {state['target']}", error)
    missed = sum(e["kind"] == "missed" for e in evidence)
    note = f"{len(evidence)} facts, {missed} missed"
    if errors:  # the task runs (it was verified) but will not on the target: say so, not "0 facts"
        note += f"; does not compile for {state['target']}: " + "; ".join(dict.fromkeys(errors))
    return {
        "evidence": evidence,
        "level": 2,
        "trace": [step("ir", f"compile offline for {state['target']}", note)],
    }


def analyze_passes(state: State, runtime: Runtime[Context]) -> dict:
    try:
        evidence = runtime.context.tools.inspect(state["base"], state["target"], deep=True)
    except DiagnoseError as error:
        return unavailable("passes", 3, "controlled recompiles and pass timeline", error)
    effects = [e for e in evidence if e["name"] == "OptionEffect"]
    return {
        "evidence": [e for e in evidence if e["stage"] == "pass"],
        "level": 3,
        "trace": [step("passes", "controlled recompiles and pass timeline", f"{len(effects)} option effects")],
    }


def propose(state: State, runtime: Runtime[Context]) -> dict:
    level = LEVELS[max(state.get("level", 0), 0)]
    done = policy.near_roofline(state, runtime.context.budget)
    if done:  # candidates for a kernel at its roof would spend the budget on what cannot pay
        return {"pending": [], "trace": [step(level, "propose rewrites", f"nothing proposed: {done}")]}
    tried = set(state.get("tried", []))
    made = runtime.context.tools.propose(
        state["task"],
        state["base"],
        state.get("findings", []),
        state.get("evidence", []),
        state["target"],
        sorted(tried),
        state.get("device", "cpu"),
    )
    candidates = [c for c in made if "dropped" not in c and "kept" not in c]
    dropped = [f"{'+'.join(c['made_by'])} ({c['dropped'][:DECLINE_CHARS]})" for c in made if "dropped" in c]
    kept = [c["kept"] for c in made if "kept" in c]  # a search's one-line summary, whole: reports read it
    chain = policy.base_lineage(state)
    repairs = policy.base_repairs(state)
    repaired = {"repairs": repairs} if repairs else {}
    fresh = [{**repaired, **c, "lineage": chain + list(c["made_by"])} for c in candidates if c["id"] not in tried]
    again = [c["id"] for c in fresh if policy.repeats_lineage(c, chain)]
    fresh = [c for c in fresh if c["id"] not in again]
    fresh.sort(key=lambda c: -(c.get("predicted_gain") or 0.0))  # best predicted first; ties keep their order
    room = max(runtime.context.budget.max_candidates - len(state.get("results", [])), 0)
    held = fresh[room:]  # best first: what the budget leaves out stays untried, for a later round
    fresh = fresh[:room]
    reason = (f"{len(fresh)} untried: " + ", ".join(c["id"] for c in fresh)) if fresh else "nothing untried"
    if not candidates:
        why = runtime.context.tools.declined(
            state["base"], state.get("findings", []), state.get("evidence", []), state["target"]
        )
        if why:
            reason += "; declined: " + "; ".join(f"{rid} ({text[:DECLINE_CHARS]})" for rid, text in why[:DECLINES])
    if dropped:  # built, then found not to compile: without this line a run reads as if nothing applied
        reason += "; dropped before verification: " + "; ".join(dropped[:DECLINES])
    if kept:  # searched, and the source's own launch values stayed: no candidate, but not nothing
        reason += f"; {KEPT}" + "; ".join(kept[:DECLINES])
    if held:
        reason += f" ({len(held)} more left for the budget of {runtime.context.budget.max_candidates})"
    if again:
        reason += f"; not again on their own output: {', '.join(again)}"
    return {"pending": fresh, "tried": [c["id"] for c in fresh], "trace": [step(level, "propose rewrites", reason)]}


def verify(state: State, runtime: Runtime[Context]) -> dict:
    deadline = state.get("started", time.time()) + runtime.context.budget.max_wall_s
    baseline = policy.baseline_of(state)
    results = runtime.context.tools.evaluate(
        state["task"],
        state["pending"],
        state["device"],
        state["target"],
        deadline=deadline,
        initial=baseline is None or baseline.failure is None,  # a task that does not run is not timed
    )
    level = LEVELS[max(state.get("level", 0), 0)]
    lines = []
    for r in results:
        value, how = policy.score(r)
        lines.append(
            f"{r['candidate']['id']}: {'passed' if r['verdict']['passed'] else 'FAILED'}"
            + (f", {value:.2f}x {how}" if r["verdict"]["passed"] else "")
        )
    verified = {r["candidate"]["id"] for r in results}
    skipped = [c["id"] for c in state["pending"] if c["id"] not in verified]
    if skipped:
        lines.append(f"not verified (wall time over {runtime.context.budget.max_wall_s:g} s): {', '.join(skipped)}")
    everything = state.get("results", []) + results
    best = policy.best_result(everything)
    update = {"results": results, "pending": [], "trace": [step(level, "verify and time", "; ".join(lines) or "none")]}
    if best is not None:
        update["best"], update["base"] = best["candidate"]["id"], best["path"]
    return update


def escalate(state: State, runtime: Runtime[Context]) -> dict:
    target, reason = policy.escalation(state, runtime.context.budget)
    return {"next": target, "trace": [step(LEVELS[max(state.get("level", 0), 0)], f"decide: {target}", reason)]}


def decide(state: State, runtime: Runtime[Context]) -> dict:
    target, reason = policy.after_verify(state, runtime.context.budget)
    return {"next": target, "trace": [step(LEVELS[max(state.get("level", 0), 0)], f"decide: {target}", reason)]}


def finish(state: State, runtime: Runtime[Context]) -> dict:
    best = policy.best_result(state.get("results", []))
    broken = policy.broken_task(policy.baseline_of(state), repaired=best is not None)
    if broken:
        return {"trace": [step("baseline", "finish", f"nothing to optimize: {broken}")]}
    reason = (
        f"best: {best['candidate']['id']} ({policy.score(best)[1]})"
        if best
        else "no candidate passed and beat it; the task stays as given"
    )
    return {"trace": [step(LEVELS[max(state.get("level", 0), 0)], "finish", reason)]}
