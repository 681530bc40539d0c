"""Records: evidence reads as a sentence and parses as data; reports validate against the schema and read
back from their JSON, an older version's included."""

import json

import pytest

from diagnose.records import (
    CaseResult,
    Candidate,
    CheckResult,
    Evidence,
    Failure,
    Finding,
    Location,
    Report,
    Roof,
    Roofline,
    Timing,
    TraceStep,
    Verdict,
    Work,
    report_from_dict,
)
from diagnose.report.reports import validate


def evidence():
    return Evidence(
        "ir",
        "ptx",
        "NarrowGlobalLoad",
        "missed",
        Location("k.py", 14, 8),
        (("bits", 32), ("reason", "mask bound not divisible by 16")),
        "ld.global.b32 %r1, [%rd2];",
    )


def test_evidence_reads_as_a_sentence():
    text = str(evidence())
    assert text.startswith("k.py:14:8: missed NarrowGlobalLoad [ptx]")
    assert "bits=32" in text
    assert evidence().arg("bits") == 32


def test_finding_needs_evidence():
    with pytest.raises(ValueError):
        Finding("TRI001", "narrow load", "warning", "high", Location("k.py", 1), ())


def test_full_report_validates_against_the_schema():
    finding = Finding("TRI001", "narrow load", "warning", "high", Location("k.py", 14, 8), (evidence(),))
    verdict = Verdict(
        True,
        "cuda",
        (CaseResult("g", 0, True, 0.0, 0.0),),
        (CheckResult("ghost_replay", True),),
        (
            Timing("candidate", "g", 1.0, 0.9, 1.1, 0.1, 0.02, 50, True),
            Timing("eager", "g", 2.0, 1.9, 2.1, 0.1, 0.02, 50, True),
        ),
        versions=(("torch", "2.11"),),
    )
    candidate = Candidate("c1", "src", "diff", ("retune_launch",), "safe", ("TRI001",), 1.5)
    report = Report(
        "t.py",
        "cuda:sm90",
        "cuda",
        (finding,),
        (TraceStep("L0", "triage", "cheap first"),),
        ((candidate, verdict),),
        "c1",
        (("diagnose", "0.1.0"),),
    )
    data = report.to_dict()
    validate(data)
    assert data["candidates"][0]["verdict"]["timings"][0]["median_ms"] == 1.0
    assert verdict.speedups("eager") == {"g": 2.0}


def test_schema_rejects_a_malformed_report():
    import jsonschema

    data = Report("t.py", "cuda:sm90", "cpu").to_dict()
    data["findings"] = [{"code": "X"}]
    with pytest.raises(jsonschema.ValidationError):
        validate(data)


def run_report() -> Report:
    """An optimize run's report, with every field a run fills."""
    finding = Finding("PRF001", "memory-bound", "warning", "medium", Location("k.py", 3, 4), (evidence(),))
    baseline = Verdict(
        True,
        "cuda",
        (CaseResult("g", 0, True, 0.0, 0.0),),
        (CheckResult("ghost_replay", True),),
        (Timing("candidate", "g", 2.0, 1.9, 2.1, 0.1, 0.02, 50, True), Timing("eager", "g", None, note="x")),
        versions=(("torch", "2.11"),),
        notes=("n",),
        phases=(("reference", 1.5), ("total", 3.0)),
    )
    failed = Verdict(False, "cuda", failure=Failure("timeout", "ran past 60 s", "tail"))
    candidate = Candidate(
        "c1",
        "src",
        "diff",
        ("retune_launch",),
        "safe",
        ("TRI001",),
        1.5,
        ("search: 2 configs",),
        lineage=("widen", "retune_launch"),
    )
    roofline = Roofline(
        work=(Work("g", 1.5e9, 0.0, "float32", flops_source="none"),),
        roof=Roof(3e12, None, "float32", True),
        timed=True,
        profiled="k",
        estimate_ms=(("g", 0.8),),
        bound_ms=0.5,
        group="g",
        bounds_ms=(("g", 0.5),),
    )
    return Report(
        "task.py",
        "cuda:sm90",
        "cuda",
        (finding,),
        (TraceStep("triage", "run source rules", "1 finding", 12.5),),
        ((candidate, baseline), (Candidate("c2", "s", "d", ("x",)), failed)),
        "c1",
        (("diagnose", "0.1.0"),),
        module="k.py",
        baseline=baseline,
        evidence=(evidence(),),
        roofline=roofline,
        deepest_level="profile",
        wall_s=42.0,
    )


def test_a_run_report_round_trips_through_its_json():
    report = run_report()
    data = report.to_dict()
    validate(data)
    assert list(data) == [
        "schema_version",
        "task",
        "module",
        "target",
        "device",
        "findings",
        "trace",
        "candidates",
        "best",
        "environment",
        "baseline",
        "evidence",
        "roofline",
        "deepest_level",
        "wall_s",
    ]
    assert data["trace"][0]["at"] == 12.5 and data["candidates"][0]["candidate"]["lineage"] == [
        "widen",
        "retune_launch",
    ]
    assert data["roofline"]["bounds_ms"] == {"g": 0.5} and data["roofline"]["roof"]["flops_per_s"] is None
    text = json.dumps(data, indent=2)
    again = report_from_dict(json.loads(text))
    assert again == report
    assert json.dumps(again.to_dict(), indent=2) == text
    assert again.best_entry[0].id == "c1" and again.roofline.bounds == {"g": 0.5}


def test_a_check_report_writes_no_run_fields():
    data = Report(
        "t.py",
        "cuda:sm90",
        "cpu",
        candidates=((Candidate("given", "s", "", ("given",)), Verdict(True, "cpu")),),
        best="given",
    ).to_dict()
    validate(data)
    assert not {"module", "baseline", "evidence", "roofline", "deepest_level", "wall_s"} & set(data)
    assert "lineage" not in data["candidates"][0]["candidate"]
    assert report_from_dict(data).to_dict() == data


def test_an_older_report_without_the_new_fields_reads_back():
    """A report of an older version: no run fields, no `at` in its trace, no `searched`, `lineage` or `phases`, and
    a roofline with only its one bound."""
    data = run_report().to_dict()
    for key in ("module", "baseline", "evidence", "deepest_level", "wall_s"):
        del data[key]
    data["roofline"] = {"bound_ms": 0.5, "group": "g"}
    del data["trace"][0]["at"]
    for entry in data["candidates"]:
        for key in ("searched", "lineage"):
            entry["candidate"].pop(key, None)
        del entry["verdict"]["phases"]
    validate(data)
    report = report_from_dict(data)
    assert report.baseline is None and report.evidence == () and report.wall_s is None and report.module is None
    assert report.trace[0].at is None and report.candidates[0][0].lineage is None
    assert report.candidates[0][1].phases == () and report.roofline.bounds == {"g": 0.5}
    assert report.roofline.work is None and report.is_run
    again = report.to_dict()
    validate(again)
    assert "at" not in again["trace"][0] and "lineage" not in again["candidates"][0]["candidate"]
    assert again["roofline"] == {"bound_ms": 0.5, "group": "g"} and again["baseline"] is None
