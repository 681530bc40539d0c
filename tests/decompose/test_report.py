"""The composite's timing: the geometric mean of its speedups over the verdict's groups, on the
end-to-end line of the report."""

from dataclasses import replace
from pathlib import Path

import pytest

from diagnose.decompose import command
from diagnose.decompose.choose import Candidate, Choice
from diagnose.decompose.report import DecomposeReport, EndToEnd, Fusion, SubgraphReport, markdown
from diagnose.records import Timing, Verdict
from diagnose.verify.harness import CheckOptions


def report_with(end: EndToEnd) -> DecomposeReport:
    sg = SubgraphReport(
        "sg0_conv",
        "conv2d",
        "(2, 3, 8, 8)",
        "(2, 4, 6, 6)",
        (Candidate("torch", "sg0.py", "reference", 2.0), Candidate("inductor", "i.py", "passed", 1.0)),
        Choice("inductor", "verified and faster"),
    )
    return DecomposeReport(Path("m.py"), Path("m.decompose"), Path("m.decompose/composite.py"), (sg,), end)


def test_the_end_to_end_line_shows_the_composite_s_speedups():
    timed = markdown(report_with(EndToEnd(True, "passed", (("eager", 1.324), ("compile", 0.91)))))
    line = next(s for s in timed.splitlines() if s.startswith("End to end"))
    assert line == "End to end (composite vs Model): PASSED: passed; 1.32x over eager, 0.91x over torch.compile"
    untimed = markdown(report_with(EndToEnd(True, "passed")))
    assert untimed.splitlines()[-1] == "End to end (composite vs Model): PASSED: passed"


def test_end_to_end_takes_the_geometric_mean_over_the_verdict_s_groups(monkeypatch):
    timings = (
        Timing("candidate", "a", 1.0),
        Timing("eager", "a", 2.0),
        Timing("compile", "a", 1.0),
        Timing("candidate", "b", 1.0),
        Timing("eager", "b", 8.0),
        Timing("compile", "b", None),
    )
    monkeypatch.setattr(command, "load_task_file", lambda model, composite: None)
    monkeypatch.setattr(command, "verify", lambda task, options: Verdict(True, "cuda", timings=timings))
    end = command.end_to_end(Path("m.py"), Path("c.py"), {"sg0": "inductor"}, CheckOptions(device="cuda"))
    assert end.passed is True and end.speedups == (("eager", pytest.approx(4.0)), ("compile", 1.0))
    torch_only = command.end_to_end(Path("m.py"), Path("c.py"), {"sg0": "torch"}, CheckOptions(device="cuda"))
    assert torch_only.passed is None and torch_only.speedups == ()


def test_each_subgraph_s_share_of_the_time_and_the_fusions_tried_are_reported():
    one = report_with(EndToEnd(True, "passed"))
    other = SubgraphReport(
        "sg1_relu",
        "relu",
        "(2, 4, 6, 6)",
        "(2, 4, 6, 6)",
        (Candidate("torch", "sg1.py", "reference", 3.0),),
        Choice("torch", "no Triton candidate"),
    )
    text = markdown(replace(one, subgraphs=(*one.subgraphs, other), fusions=(Fusion("fused_sg0_sg1", 4.0, 3.5, True),)))
    assert "Time of the chosen implementations: 4 ms in all; sg0_conv 25%, sg1_relu 75%" in text
    assert "- fused_sg0_sg1: 4 ms as two, 3.5 ms fused: taken" in text
