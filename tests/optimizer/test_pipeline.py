"""propose / evaluate as the agent calls them, the quick path for the editor, ranking and the Pareto front."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnose.records import Candidate, CaseResult, CheckResult, Timing, Verdict
from diagnose.optimizer import evaluate, pareto_front, propose
from diagnose.optimizer.pipeline import candidate_folder, rank, score
from tests.conftest import EXAMPLES
from tests.rewrite.conftest import check_options
from tests.rewrite.goldens import FIXTURES


def findings_of(path: Path) -> list[dict]:
    from diagnose.triage.cli import triage_source

    return [f.to_dict() for f in triage_source(path.read_text(), str(path), "cuda:sm90")]


def test_propose_takes_the_agents_dicts(tmp_path):
    path = tmp_path / "matmul.py"
    shutil.copy(EXAMPLES / "matmul.py", path)
    candidates = propose(str(path), findings_of(path), [], "cuda:sm90", search_configs=False, estimate=False)
    made = [c.made_by for c in candidates]
    assert made[0] == ("group-m-swizzle", "wgmma-tiles"), "the combination of the safe rewrites comes first"
    assert ("group-m-swizzle",) in made and ("wgmma-tiles",) in made
    assert len({c.id for c in candidates}) == len(candidates)
    combined = candidates[0]
    assert combined.safety == "safe"
    assert set(combined.answers) == {"TRI019@matmul.py:28", "TRI005@matmul.py:60"}
    assert combined.diff.startswith("--- a/matmul.py\n+++ b/matmul.diagnose.py\n")
    assert all(c.id.startswith("matmul-") and "/" not in c.id for c in candidates)
    assert path.read_text() == (EXAMPLES / "matmul.py").read_text()


def test_propose_triages_itself_and_reads_ir_evidence(tmp_path):
    import json

    path = tmp_path / "before.py"
    shutil.copy(FIXTURES / "vectorization-hints" / "before.py", path)
    evidence = json.loads((FIXTURES / "vectorization-hints" / "evidence.json").read_text())
    for e in evidence:
        if e.get("location"):
            e["location"]["path"] = str(path)
    candidates = propose(str(path), None, evidence, "cuda:sm90", search_configs=False, estimate=False)
    hinted = next(c for c in candidates if c.made_by == ("vectorization-hints",))
    assert any(a.startswith("GlobalAccessWidth@before.py:19") for a in hinted.answers)
    assert "rescale_rows_aligned" in hinted.source
    without = propose(str(path), None, [], "cuda:sm90", search_configs=False, estimate=False)
    assert all("vectorization-hints" not in c.made_by for c in without), "no IR evidence, no hints"


def test_a_scalar_loop_per_element_gets_both_of_its_answers(tmp_path):
    """TRI008 on a depthwise window, one output per program: block-loop-sum loads the nine taps as a
    block, block-per-program runs 1024 outputs' loops side by side; each is its own candidate (the
    first one's tl.sum leaves the second nothing to do, so they do not chain)."""
    path = tmp_path / "depthwise.py"
    shutil.copy(FIXTURES / "block-loop-sum" / "before_window.py", path)
    findings = findings_of(path)
    assert any(f["code"] == "TRI008" for f in findings)
    candidates = propose(str(path), findings, [], "cuda:sm90", search_configs=False, estimate=False)
    made = {c.made_by for c in candidates}
    assert ("block-loop-sum",) in made and ("block-per-program",) in made
    per_program = next(c for c in candidates if c.made_by == ("block-per-program",))
    assert any(a.startswith("TRI008@") for a in per_program.answers)


def test_unsafe_rewrites_stay_alone_and_labelled(tmp_path):
    path = tmp_path / "before.py"
    shutil.copy(FIXTURES / "dot-input-precision" / "before.py", path)
    candidates = propose(str(path), None, [], "cuda:sm90", search_configs=False, estimate=False)
    unsafe = [c for c in candidates if "dot-input-precision" in c.made_by]
    assert unsafe and all(c.safety == "unsafe" and c.made_by == ("dot-input-precision",) for c in unsafe)
    assert all("dot-input-precision" not in c.made_by for c in candidates if len(c.made_by) > 1)


@pytest.mark.slow
def test_evaluate_verifies_from_the_cache_and_ranks(tmp_path):
    path = tmp_path / "before.py"
    shutil.copy(FIXTURES / "fuse-elementwise" / "before.py", path)
    good = propose(str(path), None, [], "cuda:sm90", search_configs=False, estimate=False)
    assert [c.made_by for c in good] == [("fuse-elementwise",)]
    wrong_source = good[0].source.replace("b * 2.0", "b * 3.0")
    wrong = Candidate("before-broken", wrong_source, "", ("hand",))
    results = evaluate(str(path), [wrong, good[0]], "cpu", "cuda:sm90", check=check_options(path))
    assert [c.id for c, _ in results] == [good[0].id, "before-broken"], "passed first"
    assert results[0][1].passed and not results[1][1].passed
    folder = candidate_folder(path)
    assert (folder / f"{good[0].id}.py").read_text() == good[0].source
    assert path.read_text() == (FIXTURES / "fuse-elementwise" / "before.py").read_text()
    assert pareto_front(results) == results[:1]


def verdict(passed: bool, candidate_ms: float | None = None, initial_ms: float | None = None) -> Verdict:
    timings = ()
    if candidate_ms is not None:
        timings = (Timing("candidate", "g", median_ms=candidate_ms), Timing("initial", "g", median_ms=initial_ms))
    return Verdict(passed, "cuda", (CaseResult("g", 0, passed),), (CheckResult("ghost_replay", True),), timings)


def test_rank_and_pareto_front_measured_then_estimated():
    fast_unsafe = (Candidate("a", "", "", ("x",), safety="unsafe"), verdict(True, 1.0, 4.0))
    mid_safe = (Candidate("b", "", "", ("y",)), verdict(True, 2.0, 4.0))
    slow_safe = (Candidate("c", "", "", ("z",)), verdict(True, 3.0, 4.0))
    failed = (Candidate("d", "", "", ("w",)), verdict(False))
    ranked = rank([failed, slow_safe, mid_safe, fast_unsafe])
    assert [c.id for c, _ in ranked] == ["a", "b", "c", "d"]
    assert score(*fast_unsafe) == (4.0, "measured")
    assert [c.id for c, _ in pareto_front(ranked)] == ["a", "b"]
    estimated = (Candidate("e", "", "", ("v",), predicted_gain=1.5), verdict(True))
    assert score(*estimated) == (1.5, "estimated (nothing timed)")


def test_quick_candidates_for_the_editor():
    from diagnose.optimizer import candidates_for_finding
    from diagnose.triage.cli import triage_source

    source = (EXAMPLES / "softmax.py").read_text()
    finding = next(f for f in triage_source(source, "softmax.py", "cuda:sm90") if f.code == "TRI007")
    candidates = candidates_for_finding(finding, source, "softmax.py")
    assert [c.made_by for c in candidates] == [("single-pass-row",), ("online-softmax",)]
    assert "softmax_kernel_single_block" in candidates[0].source
    assert "online softmax" in candidates[1].source and "single_block" not in candidates[1].source


def test_missing_task_is_a_usage_error(tmp_path):
    from diagnose.errors import UsageError

    with pytest.raises(UsageError):
        propose(str(tmp_path / "missing.py"), None, [], "cuda:sm90")


def test_a_rewrite_of_a_kernel_the_replay_never_launches_does_not_hold(tmp_path):
    """A module with a forward and a backward kernel, replayed through its backward host function:
    rows-per-program would change only the forward kernel (the backward already loops over a range of
    rows per program), so it is not proposed (it would be verified and timed for nothing); replayed
    through the forward, it is."""
    from diagnose.optimizer.pipeline import survey
    from diagnose.rewrite.rewrite import RewriteContext
    from diagnose.task import load_task
    from diagnose.task.specs import Inputs

    module = tmp_path / "rms_ops.py"
    shutil.copy(FIXTURES / "programs-per-sm" / "before_autograd.py", module)

    def rows_per_program(call: str):
        task = load_task(module, inputs=Inputs(calls=(call,)), cache=tmp_path / "cache")
        ctx = RewriteContext(task.reference_path.read_text(), str(task.reference_path))
        return next(a.precondition for a in survey(ctx) if a.rewrite.id == "rows-per-program")

    backward = rows_per_program("rms_norm_backward(dY=f32[12,40], X=f32[12,40], W=f32[40], RSTD=f32[12])")
    assert not backward.holds and "_rms_bwd: a loop's range is computed from pid" in backward.reason
    forward = rows_per_program("RMSNormFunction.apply(f32[12,40], f32[40], 1e-6)")
    assert forward.holds and forward.kernels == ("_rms_fwd",)


def test_declined_names_the_rewrites_that_answer_a_finding_but_do_not_apply():
    from diagnose.records import Evidence, Finding, Location
    from diagnose.optimizer.pipeline import declined

    path = FIXTURES / "launch-options" / "rejected_autotuned.py"
    shape = Evidence("profile", "estimate", "LaunchShape", "metric", None, (("programs", 8),))
    finding = Finding("PRF004", "8 programs for 132 SMs", "warning", "medium", Location(str(path), 1, 0), (shape,))
    why = dict(declined(path, [finding], (), "cuda:sm90"))
    assert "autotuned" in why["launch-options"]
    assert all(rid in ("launch-options", "programs-per-sm", "prefetch-next-row", "split-k") for rid in why), why


def test_a_search_that_keeps_the_current_values_is_named_in_the_proposal(tmp_path, monkeypatch):
    """No candidate, but not nothing: launch-options searched (here, with no device, it cannot time) and
    kept the launch's own values; the proposal says so (TritonBench-G's cosine_compute read "no rewrite
    was proposed" after such a search)."""
    from diagnose.records import Evidence, Finding, Location
    from diagnose.optimizer.pipeline import proposal

    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path))
    path = FIXTURES / "launch-options" / "before.py"
    shape = Evidence("profile", "estimate", "LaunchShape", "metric", None, (("programs", 8),))
    # PRF002 (compute-bound short of the roof): launch-options is the one rewrite that answers it here, so
    # no estimated search (compiles on the CPU) runs beside it
    finding = Finding("PRF002", "compute-bound", "warning", "medium", Location(str(path), 1, 0), (shape,))
    made = proposal(path, [finding], (), "cuda:sm90", device="cpu", estimate=False)
    kept = {k.rewrite: k.summary for k in made.kept}
    assert "launch-options" in kept and not any("launch-options" in c.made_by for c in made.candidates)
    assert (
        kept["launch-options"].startswith("launch-options: 1 configs")
        and "nothing is timed on cpu" in kept["launch-options"]
    )
    assert kept["launch-options"].endswith("chose num_warps=4, num_stages=3")


def test_the_optimizer_and_the_report_score_a_result_alike():
    """One score: the pipeline's, the report's and the agent's (on its state's JSON) agree, failed ones score 0."""
    import doctest

    from diagnose import scoring
    from diagnose.agent.policy import score as state_score
    from diagnose.report.scores import score as report_score

    assert doctest.testmod(scoring).failed == 0
    for candidate, result in [
        (Candidate("a", "", "", ("x",)), verdict(True, 1.0, 4.0)),
        (Candidate("e", "", "", ("v",), predicted_gain=1.5), verdict(True)),
        (Candidate("d", "", "", ("w",), predicted_gain=3.0), verdict(False)),
    ]:
        as_json = {"verdict": result.to_dict(), "candidate": candidate.to_dict(), "path": ""}
        assert score(candidate, result) == report_score(candidate, result) == state_score(as_json)
    assert score(Candidate("d", "", "", ("w",), predicted_gain=3.0), verdict(False)) == (0.0, "failed verification")
