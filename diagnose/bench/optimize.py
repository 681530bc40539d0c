"""Optimize mode of a sweep: the agent on one suite entry, its report turned into store rows.

The agent runs as `diagnose optimize` would (`diagnose.agent.run.optimize`), with its outputs kept in
the sweep's own folder (`<store>.runs/<entry>/`), never next to the suite's files, so a suite folder
stays as it was. The file it runs on is the entry itself for the default suite format; an adapter of
another format gives it through its `optimize_task` (`diagnose/bench/suites/__init__.py`): a task file
it writes into that folder (a KernelBench solution with its problem as reference), or the suite's own
kernel module (a TritonBench-G original). Either way the rows are made here, the same for every suite.
One row per input group of the baseline (the entry as given):
- `medians_ms.initial`: the entry's own kernel, timed in the best candidate's own timing run (beside it),
  else in the baseline verification;
- `medians_ms.candidate`: the best verified candidate's, or the initial one when none beat it;
- `speedup_vs_initial` and `speedup_vs_eager`: ratios measured in the best candidate's own timing run, so
  `speedup_vs_initial` is `initial / candidate` of the row (two runs differ: on the H200 with eight runs
  sharing the host, creation_arange's initial kernel read 0.201 ms in its baseline, 0.175 ms beside a candidate);
- `speedup_vs_compile`: the baseline run's `torch.compile` median over the candidate's (two runs, one
  device, the same protocol);
- `roofline_fraction` on each group the profile level bounded; `deepest_level`; `rewrites` and the findings
  they `answers` (`CODE@file:line`); `run_id`.

The rows are made from the report's JSON (`Report.to_dict()`, what `report.json` holds), the form the
store keeps beside them; its timings are read with the geometric mean of `diagnose.scoring`.
"""

from __future__ import annotations

import re
from pathlib import Path

from diagnose.agent.policy import roofline_bounds
from diagnose.agent.state import KEPT, Budget
from diagnose.scoring import geomean
from diagnose.verify.shapes import base_group

Row = tuple[str, str, dict]


def optimize_file(
    path: Path, device: str, target: str, budget: Budget, out_dir: Path, device_lock: str | None = None
) -> list[Row]:
    """The agent on one task file or kernel module, its outputs in `out_dir`; the store rows of its report."""
    # deferred: imports langgraph (the agent), which only the optimize mode runs
    from diagnose.agent.run import optimize

    result = optimize(str(path), target=target, device=device, budget=budget, out_dir=out_dir, device_lock=device_lock)
    return rows_from_report(result.report.to_dict(), result.run_id)


def medians(verdict: dict, variant: str) -> dict[str, float]:
    """A variant's median per input group, from a verdict's JSON (groups not timed are left out)."""
    return {
        t["group"]: t["median_ms"] for t in verdict.get("timings", []) if t["variant"] == variant and t.get("median_ms")
    }


def speedups(verdict: dict, over: str) -> dict[str, float]:
    """Candidate over the `over` variant per group, both from the verdict's one timing run."""
    mine, base = medians(verdict, "candidate"), medians(verdict, over)
    return {g: base[g] / mine[g] for g in mine if g in base}


def rows_from_report(report: dict, run_id: str) -> list[Row]:
    """Store rows (group, status, data) from an agent report's JSON."""
    baseline = report.get("baseline") or {}
    best = next((c for c in report["candidates"] if c["candidate"]["id"] == report["best"]), None)
    common = {
        "deepest_level": report.get("deepest_level"),
        "run_id": run_id,
        "rewrites": list(best["candidate"]["made_by"]) if best else [],
        "answers": list(best["candidate"].get("answers", ())) if best else [],
    }
    if not baseline.get("passed"):
        failed = [f"{c['name']}: {c['detail']}" for c in baseline.get("checks", []) if not c["passed"]]
        # what failed, in the row: the failed checks, else the first wrong case's reason
        why = failed or [c["reason"] for c in baseline.get("cases", []) if not c.get("passed") and c.get("reason")][:1]
        failure = baseline.get("failure") or {
            "kind": "incorrect",
            "log_tail": "",
            "message": "the entry as given fails verification" + (f": {'; '.join(why)}" if why else ""),
        }
        return [("*", "failed", {**common, "failure": failure, "failed_checks": failed})]
    initial = {**medians(baseline, "candidate"), **(medians(best["verdict"], "initial") if best else {})}
    compiled = medians(baseline, "compile")
    optimized = medians(best["verdict"], "candidate") if best else initial
    bounds = roofline_bounds(report.get("roofline") or {})
    out = []
    for group in dict.fromkeys(base_group(c["group"]) for c in baseline.get("cases", [])):
        mine = optimized.get(group)
        bound = bounds.get(group)
        out.append(
            (
                group,
                "passed",
                {
                    **common,
                    "correct": True,
                    "medians_ms": {"initial": initial.get(group), "candidate": mine, "compile": compiled.get(group)},
                    "timed": mine is not None,
                    "speedup_vs_initial": speedups(best["verdict"], "initial").get(group)
                    if best
                    else (1.0 if mine else None),
                    "speedup_vs_eager": speedups(best["verdict"] if best else baseline, "eager").get(group),
                    "speedup_vs_compile": compiled[group] / mine if mine and compiled.get(group) else None,
                    "roofline_fraction": bound / mine if bound and mine else None,
                    "reasons": [] if best else [why_unimproved(report)],
                },
            )
        )
    return out


def why_unimproved(report: dict) -> str:
    """Why a run kept the entry as given, read from its candidates and trace: nothing that passed and
    beat it, nothing that passed, nothing verified inside the wall budget, nothing to propose (and why, where the profile said:
    already near the roofline), or the wall budget spent before a level deep enough proposed one."""
    trace = report.get("trace", [])
    # the verify node's line for candidates it had no time for: "not verified (wall time over N s): a, b"
    unverified = [
        line.strip()
        for t in trace
        for line in t["reason"].split(";")
        if line.strip().startswith("not verified (wall time over")
    ]
    passed = [c["verdict"] for c in report.get("candidates", []) if c["verdict"]["passed"]]
    if passed:
        timed = [s for s in (geomean(speedups(v, "initial").values()) for v in passed) if s is not None]
        fastest = f" (the fastest {max(timed):.2f}x)" if timed else ""
        return (
            f"{len(passed)} candidate(s) passed, none faster than the task as given{fastest}; the entry stays as given"
        )
    if report.get("candidates"):
        return "no candidate passed verification; the entry stays as given"
    if unverified:
        limit = unverified[-1].split("(", 1)[1].split(")", 1)[0]
        count = len(unverified[-1].split(": ", 1)[1].split(", "))
        return f"{count} proposed candidate(s) left unverified ({limit}); the entry stays as given"
    # the propose node's line when the evidence says there is nothing to gain: "nothing proposed: <why>"
    nothing = [t["reason"] for t in trace if t["reason"].startswith("nothing proposed: ")]
    if nothing:
        return f"{nothing[-1]}; the entry stays as given"
    spent = [t for t in trace if t.get("action") == "decide: finish" and t["reason"].startswith("budget spent: wall")]
    if spent:
        wall = spent[-1]["reason"].removeprefix("budget spent: ")
        return f"{wall} at the {spent[-1].get('level', '?')} level, before any rewrite was proposed; the entry stays as given"
    # the propose node's line when a launch-configuration search kept the source's own values
    from diagnose.optimizer.search import SUMMARY  # deferred: the search module imports torch (0.4 s)

    kept_search = re.compile(re.escape(KEPT) + SUMMARY.pattern)  # as the propose node's line names it
    searched = [m for t in trace for m in kept_search.finditer(t["reason"])]
    if searched:
        last = searched[-1]
        how = last["how"]
        if last["configs"] == "1" and how.startswith("the current values (") and how.endswith(")"):
            return f"{last['rewrite']} kept the current {last['chose']}: {how[20:-1]}; the entry stays as given"
        return (
            f"{last['rewrite']} searched {last['configs']} launch configurations and kept the current "
            f"{last['chose']} (ranked by {how}); the entry stays as given"
        )
    return "no rewrite was proposed for its findings; the entry stays as given"
