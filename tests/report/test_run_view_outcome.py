"""The one line that ends an `optimize` run says why the task stays as given."""

from diagnose.records import Candidate, Report, Verdict
from diagnose.report.run_view import outcome


def _candidate(cid: str, passed: bool) -> tuple[Candidate, Verdict]:
    return Candidate(cid, "", "", ("retune-launch",)), Verdict(passed, "cpu")


def _report(*candidates: tuple[Candidate, Verdict]) -> Report:
    return Report("t.py", "cuda:sm90", "cpu", candidates=candidates)


def test_no_proposal_no_pass_and_no_gain_are_told_apart():
    assert outcome(_report()).startswith("No rewrite was proposed")
    assert outcome(_report(_candidate("a", False))).startswith("No candidate passed verification")
    assert outcome(_report(_candidate("a", True))).startswith("No verified candidate beat the task as given")
