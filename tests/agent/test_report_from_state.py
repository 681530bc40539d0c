"""A finished run's state (JSON-ready dicts, as the checkpointer keeps them) becomes its `Report` in one place,
whose JSON is the `report.json` earlier versions wrote from the same state: the same keys, values and order."""

import json
import time

from diagnose.agent.run import report_from_state
from diagnose.records import (
    Candidate,
    CaseResult,
    Evidence,
    Finding,
    Location,
    Report,
    Roof,
    Timing,
    Verdict,
    Work,
    report_from_dict,
)
from diagnose.report.reports import environment, validate


def state(task: str) -> dict:
    evidence = Evidence("ir", "ptx", "GlobalAccessWidth", "missed", Location(task, 3, 4), (("bits", 32),)).to_dict()
    finding = Finding(
        "TRI001",
        "narrow load",
        "warning",
        "high",
        Location(task, 3, 4),
        (Evidence("triage", "ast", "Strided", "missed", Location(task, 3, 4)),),
    ).to_dict()
    baseline = Verdict(
        True,
        "cpu",
        (CaseResult("g", 0, True, 0.0, 0.0),),
        timings=(Timing("candidate", "g"),),
        phases=(("reference", 1.0),),
    ).to_dict()
    candidate = {**Candidate("c1", "src", "diff", ("widen",), predicted_gain=1.5).to_dict(), "lineage": ["widen"]}
    verdict = Verdict(True, "cpu", (CaseResult("g", 0, True, 0.0, 0.0),)).to_dict()
    roofline = {
        "work": [Work("g", 1024.0, 0.0, "float32").to_dict()],
        "roof": Roof(3e12, None, "float32", False).to_dict(),
        "timed": False,
        "profiled": "task",
        "estimate_ms": {"g": 0.01},
    }
    trace = [
        {"level": "baseline", "action": "verify the task as given", "reason": "passed=True", "at": 1.5},
        {"level": "profile", "action": "roofline and bottleneck", "reason": "not timed", "at": 2.5},
    ]
    return {
        "task": task,
        "target": "cuda:sm90",
        "device": "cpu",
        "level": 1,
        "started": time.time() - 5,
        "findings": [finding],
        "evidence": [evidence],
        "trace": trace,
        "baseline": baseline,
        "roofline": roofline,
        "results": [{"candidate": candidate, "verdict": verdict, "path": "c1.py"}],
    }


def as_earlier_versions_wrote_it(values: dict, wall_s: float) -> dict:
    results = values["results"]
    return {
        "schema_version": 1,
        "task": values["task"],
        "target": values["target"],
        "device": values["device"],
        "findings": values["findings"],
        "trace": values["trace"],
        "candidates": [{"candidate": r["candidate"], "verdict": r["verdict"]} for r in results],
        "best": "c1",
        "environment": [list(pair) for pair in environment()],
        "baseline": values["baseline"],
        "evidence": values["evidence"],
        "roofline": values["roofline"],
        "deepest_level": "profile",
        "wall_s": wall_s,
    }


def test_the_report_of_a_state_is_a_record_with_the_json_of_earlier_versions(tmp_path):
    task = tmp_path / "task.py"
    task.write_text("x = 1\n")
    values = state(str(task))
    report = report_from_state(values)
    assert isinstance(report, Report) and report.best == "c1" and report.deepest_level == "profile"
    assert report.trace[1].at == 2.5 and report.candidates[0][0].lineage == ("widen",)
    assert report.roofline.estimate_ms == (("g", 0.01),) and report.baseline.phases == (("reference", 1.0),)
    assert report.wall_s >= 5
    data = report.to_dict()
    validate(data)
    assert json.dumps(data) == json.dumps(as_earlier_versions_wrote_it(values, report.wall_s))
    assert report_from_dict(data) == report


def test_a_state_without_a_roofline_or_level_reports_none(tmp_path):
    task = tmp_path / "task.py"
    task.write_text("x = 1\n")
    values = {**state(str(task)), "roofline": {}, "level": -1, "results": []}
    data = report_from_state(values).to_dict()
    validate(data)
    assert data["roofline"] is None and data["deepest_level"] is None and data["best"] is None
