"""Records: evidence reads as a sentence and parses as data; reports validate against the schema."""

import pytest

from diagnose.records import (CaseResult, Candidate, CheckResult, Evidence, Finding, Location, Report, Timing,
                              TraceStep, Verdict)
from diagnose.report.reports import validate


def evidence():
    return Evidence("ir", "ptx", "NarrowGlobalLoad", "missed", Location("k.py", 14, 8),
                    (("bits", 32), ("reason", "mask bound not divisible by 16")), "ld.global.b32 %r1, [%rd2];")


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
    verdict = Verdict(True, "cuda", (CaseResult("g", 0, True, 0.0, 0.0),), (CheckResult("ghost_replay", True),),
                      (Timing("candidate", "g", 1.0, 0.9, 1.1, 0.1, 0.02, 50, True),
                       Timing("eager", "g", 2.0, 1.9, 2.1, 0.1, 0.02, 50, True)),
                      versions=(("torch", "2.11"),))
    candidate = Candidate("c1", "src", "diff", ("retune_launch",), "safe", ("TRI001",), 1.5)
    report = Report("t.py", "cuda:sm90", "cuda", (finding,), (TraceStep("L0", "triage", "cheap first"),),
                    ((candidate, verdict),), "c1", (("diagnose", "0.1.0"),))
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
