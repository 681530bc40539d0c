"""The one line that ends an `optimize` run says why the task stays as given."""

from diagnose.report.run_view import outcome


def _candidate(cid: str, passed: bool) -> dict:
    return {"candidate": {"id": cid, "made_by": ["retune-launch"]}, "verdict": {"passed": passed, "timings": []}}


def test_no_proposal_no_pass_and_no_gain_are_told_apart():
    assert outcome({"candidates": [], "best": None}).startswith("No rewrite was proposed")
    assert outcome({"candidates": [_candidate("a", False)], "best": None}).startswith(
        "No candidate passed verification")
    assert outcome({"candidates": [_candidate("a", True)], "best": None}).startswith(
        "No verified candidate beat the task as given")
