"""The agent's shape and its escalation decisions, on constructed state: no device, no LLM, no workers."""

from pathlib import Path

from diagnose.agent import policy
from diagnose.agent.graph import build_graph
from diagnose.agent.state import Budget
from diagnose.records import Candidate, Failure, Timing, Verdict, verdict_from_dict

SNAPSHOT = Path(__file__).with_name("graph.mmd")


def test_graph_shape_matches_its_snapshot():
    assert build_graph().get_graph().draw_mermaid() == SNAPSHOT.read_text()


def verdict_json(passed=True, *timings: Timing, failure: Failure | None = None) -> dict:
    """A verdict as the state holds it (`Verdict.to_dict()`)."""
    return Verdict(passed, "cuda", timings=timings, failure=failure).to_dict()


def timed_verdict(candidate_ms, initial_ms=2.0, passed=True, group="g"):
    return verdict_json(passed, Timing("candidate", group, candidate_ms), Timing("initial", group, initial_ms))


def result(id_, verdict, predicted=None, **fields):
    candidate = Candidate(id_, "", "", (id_,), predicted_gain=predicted, **fields)
    return {"candidate": candidate.to_dict(), "verdict": verdict, "path": f"{id_}.py"}


def test_escalates_level_by_level_then_finishes():
    budget = Budget()
    assert policy.escalation({"level": 0, "started": 0}, budget, now=1)[0] == "profile"
    assert policy.escalation({"level": 1, "started": 0}, budget, now=1)[0] == "inspect_ir"
    assert policy.escalation({"level": 2, "started": 0}, budget, now=1)[0] == "analyze_passes"
    target, reason = policy.escalation({"level": 3, "started": 0}, budget, now=1)
    assert target == "finish" and "deepest level" in reason


def test_stops_when_the_budget_is_spent():
    state = {"level": 0, "started": 0, "results": [result(str(i), timed_verdict(1.0)) for i in range(3)]}
    target, reason = policy.escalation(state, Budget(max_candidates=3), now=1)
    assert target == "finish" and "3 candidates" in reason
    target, reason = policy.after_verify({"level": 0, "started": 0}, Budget(max_wall_s=10), now=11)
    assert target == "finish" and "wall time" in reason


def test_stops_near_the_roofline():
    state = {
        "level": 1,
        "started": 0,
        "roofline": {"bound_ms": 0.95, "group": "g"},
        "results": [result("fast", timed_verdict(1.0))],
    }
    target, reason = policy.after_verify(state, Budget(roofline_fraction=0.9), now=1)
    assert target == "finish" and "95% of the roofline" in reason
    state["roofline"]["bound_ms"] = 0.5
    assert policy.after_verify(state, Budget(roofline_fraction=0.9), now=1)[0] == "propose"


def test_stops_only_when_every_bounded_group_is_near_the_roofline():
    def verdict(**ms):
        return verdict_json(
            True,
            *(Timing(v, g, m * (2 if v == "initial" else 1)) for g, m in ms.items() for v in ("candidate", "initial")),
        )

    state = {
        "level": 1,
        "started": 0,
        "roofline": {"bound_ms": 0.6, "group": "b", "bounds_ms": {"a": 0.95, "b": 0.6}},
        "results": [result("fast", verdict(a=1.0, b=1.0))],
    }
    assert policy.after_verify(state, Budget(roofline_fraction=0.9), now=1)[0] == "propose"  # b at 60%
    state["results"] = [result("faster", verdict(a=1.0, b=0.65))]
    target, reason = policy.after_verify(state, Budget(roofline_fraction=0.9), now=1)
    assert target == "finish" and "92% of the roofline bound on every input group (farthest: b)" in reason


def test_a_task_already_at_its_roof_gets_no_candidates():
    from types import SimpleNamespace

    from diagnose.agent import nodes

    class NoProposals:
        def propose(self, *args):
            raise AssertionError("nothing may be proposed for a kernel at its roof")

    baseline = verdict_json(True, *(Timing("candidate", g, 1.0) for g in "ab"))
    state = {
        "task": "t.py",
        "base": "t.py",
        "target": "cuda:sm90",
        "level": 1,
        "started": 0,
        "baseline": baseline,
        "roofline": {"bound_ms": 0.92, "group": "b", "bounds_ms": {"a": 0.97, "b": 0.92}},
    }
    runtime = SimpleNamespace(context=SimpleNamespace(budget=Budget(roofline_fraction=0.9), tools=NoProposals()))
    update = nodes.propose(state, runtime)
    assert update["pending"] == []
    assert "the task as given reaches 92% of the roofline bound on every input group" in update["trace"][0]["reason"]
    target, reason = policy.escalation(state, Budget(roofline_fraction=0.9), now=1)
    assert target == "finish" and "the task as given reaches 92%" in reason
    state["roofline"]["bounds_ms"]["a"] = 0.5  # one group far from its bound: go on
    assert policy.near_roofline(state, Budget(roofline_fraction=0.9)) is None


def test_a_codemod_is_not_proposed_again_on_its_own_output():
    from types import SimpleNamespace

    from diagnose.agent import nodes

    def candidate(id_, made_by):
        return {"id": id_, "made_by": made_by, "predicted_gain": 1.0}

    class Tools:
        def propose(self, *args):
            return [
                candidate("t-tiles-1-tiles-2", ["wgmma-tiles"]),
                candidate("t-tiles-1-swizzle-3", ["group-m-swizzle"]),
                candidate("t-tiles-1-llm-4", ["llm:m"]),
            ]

    best = {
        "candidate": Candidate("t-tiles-1", "", "", ("wgmma-tiles",), lineage=("wgmma-tiles",)).to_dict(),
        "verdict": timed_verdict(1.0),
        "path": "t-tiles-1.py",
    }
    state = {
        "task": "t.py",
        "base": "t-tiles-1.py",
        "target": "cuda:sm90",
        "level": 1,
        "started": 0,
        "results": [best],
        "best": "t-tiles-1",
    }
    runtime = SimpleNamespace(context=SimpleNamespace(budget=Budget(), tools=Tools()))
    update = nodes.propose(state, runtime)
    assert [c["id"] for c in update["pending"]] == ["t-tiles-1-swizzle-3", "t-tiles-1-llm-4"]
    assert update["pending"][0]["lineage"] == ["wgmma-tiles", "group-m-swizzle"]
    assert "not again on their own output: t-tiles-1-tiles-2" in update["trace"][0]["reason"]
    assert policy.base_lineage({"results": []}) == []


def test_a_prediction_missed_is_said():
    state = {"level": 0, "started": 0, "results": [result("a", timed_verdict(1.6), predicted=3.0)]}
    target, reason = policy.after_verify(state, Budget(), now=1)
    assert target == "propose" and "short of its predicted 3.00x" in reason


def test_best_is_measured_where_timed_and_estimated_where_not():
    timed = [
        result("slow", timed_verdict(1.9)),
        result("fast", timed_verdict(0.5)),
        result("broken", timed_verdict(0.1, passed=False)),
    ]
    assert policy.best_result(timed)["candidate"]["id"] == "fast"
    untimed = [result("a", verdict_json(True), predicted=1.5), result("b", verdict_json(True), predicted=3.0)]
    best = policy.best_result(untimed)
    assert best["candidate"]["id"] == "b" and policy.score(best) == (3.0, "estimated (nothing timed)")
    assert policy.best_result([result("x", timed_verdict(1.0, passed=False))]) is None
    # verified, nothing timed, no gain predicted (or one that prints as 1.00x): nothing to hand back
    assert policy.best_result([result("c", verdict_json(True))]) is None
    assert policy.best_result([result("d", verdict_json(True), predicted=1.004)]) is None


def test_a_candidate_timed_no_faster_than_the_task_as_given_is_never_best():
    slower = [result("slower", timed_verdict(2.1)), result("same", timed_verdict(2.0))]
    assert policy.best_result(slower) is None
    assert policy.best_result([*slower, result("faster", timed_verdict(1.9))])["candidate"]["id"] == "faster"
    state = {"level": 1, "started": 0, "results": slower}
    assert policy.after_verify(state, Budget(), now=1) == (
        "propose",
        "no candidate passed verification and beat the task as given yet",
    )


def test_a_measured_gain_inside_the_noise_is_not_a_result():
    """1% faster is under the smallest gain worth a patch; 5% faster counts when the runs are tight,
    not when half their interquartile range is 10% of the median."""
    assert policy.best_result([result("tiny", timed_verdict(1.98))]) is None
    tight = timed_verdict(1.9)
    for t in tight["timings"]:
        t["iqr_ms"] = 0.01
    assert policy.best_result([result("tight", tight)])["candidate"]["id"] == "tight"
    noisy = timed_verdict(1.9)
    for t in noisy["timings"]:
        t["iqr_ms"] = 0.4
    assert policy.best_result([result("noisy", noisy)]) is None


def test_a_round_past_the_wall_budget_leaves_its_candidates_unverified(tmp_path):
    from langgraph.runtime import Runtime

    from diagnose.agent import nodes
    from diagnose.agent.state import Context
    from diagnose.agent.tools import Tools

    pending = [{"id": "a", "path": str(tmp_path / "a.py")}, {"id": "b", "path": str(tmp_path / "b.py")}]
    state = {
        "task": str(tmp_path / "task.py"),
        "device": "cpu",
        "target": "cuda:sm90",
        "level": 0,
        "started": 0.0,
        "pending": pending,
    }
    context = Context(run_dir=str(tmp_path), budget=Budget(max_wall_s=10), tools=Tools(str(tmp_path)))
    update = nodes.verify(state, Runtime(context=context))
    assert update["results"] == []
    assert update["trace"][0]["reason"] == "not verified (wall time over 10 s): a, b"


def test_a_task_whose_own_code_does_not_run_finishes_after_the_baseline():
    from diagnose.agent.graph import route_after_baseline

    raised = verdict_json(False, failure=Failure("exception", "RuntimeError: boom\nmore"))
    assert (
        policy.broken_task(verdict_from_dict(raised))
        == "the task as given does not run: RuntimeError: boom (exception)"
    )
    assert route_after_baseline({"baseline": raised}) == "finish"
    wrong = verdict_json(False)  # ran, and failed checks: rewrites may still help
    assert (
        policy.broken_task(verdict_from_dict(wrong)) is None and route_after_baseline({"baseline": wrong}) == "triage"
    )
    assert route_after_baseline({"baseline": verdict_json(True)}) == "triage" and policy.broken_task(None) is None


def propose_step(state: dict, made: list[dict], declined: list[tuple[str, str]] = ()) -> dict:
    """The propose node's update on `state`, with tools that propose `made` and decline `declined`."""
    from types import SimpleNamespace

    from diagnose.agent import nodes

    tools = SimpleNamespace(propose=lambda *args: made, declined=lambda *args: list(declined))
    return nodes.propose(state, SimpleNamespace(context=SimpleNamespace(budget=Budget(), tools=tools)))


def test_a_propose_step_with_nothing_says_why_the_answering_rewrites_declined():
    state = {
        "task": "t.py",
        "base": "t.py",
        "target": "cuda:sm90",
        "level": 1,
        "started": 0,
        "findings": [{"code": "PRF004"}],
    }
    update = propose_step(
        state, [], [("launch-options", "_k in op: autotuned: its configs set num_warps and num_stages")]
    )
    assert update["trace"][0]["reason"] == (
        "nothing untried; declined: launch-options (_k in op: autotuned: its configs set num_warps and num_stages)"
    )


def test_a_candidate_dropped_before_verification_is_named_with_why():
    """A rewrite that held and was built, then dropped because its source does not compile for the
    target, must not read as 'nothing applied' (Liger's DyT: the int32 twin's size check failed)."""
    state = {
        "task": "t.py",
        "base": "t.py",
        "target": "cuda:sm90",
        "level": 2,
        "started": 0,
        "evidence": [{"name": "Int64IndexArithmetic"}],
    }
    update = propose_step(
        state,
        [
            {
                "made_by": ["int32-index"],
                "dropped": "does not compile for cuda:sm90: AttributeError: 'NoneType' object has no attribute",
            }
        ],
    )
    assert update["pending"] == []
    assert update["trace"][0]["reason"] == (
        "nothing untried; dropped before verification: int32-index (does not compile for cuda:sm90: "
        "AttributeError: 'NoneType' object has no attribute)"
    )


def test_a_search_that_kept_the_current_values_is_named_when_nothing_is_proposed():
    summary = (
        "launch-options: 6 configs, 6 after IR pruning, ranked by time on cuda (harness medians; the first 6 "
        "of the search space); chose num_warps=4"
    )
    state = {
        "task": "t.py",
        "base": "t.py",
        "target": "cuda:sm90",
        "level": 1,
        "started": 0,
        "findings": [{"code": "PRF005"}],
    }
    update = propose_step(state, [{"made_by": ["launch-options"], "kept": summary}])
    assert update["pending"] == []
    assert update["trace"][0]["reason"] == f"nothing untried; searched, the current values kept: {summary}"


CHAINED_COMPARISON = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, x):
        return x * 2


@triton.jit
def double_kernel(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    if 0 <= pid < n:
        tl.store(out_ptr + pid, tl.load(x_ptr + pid) * 2)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        double_kernel[(x.numel(),)](x, out, x.numel())
        return out


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
"""


def test_a_task_that_runs_in_the_interpreter_but_does_not_compile_says_why(tmp_path):
    """A first version with a chained comparison runs in the interpreter (so it verifies) and does not
    compile for sm_90: the IR step names the compiler's reason instead of reporting "0 facts"."""
    from types import SimpleNamespace

    from diagnose.agent import nodes
    from diagnose.agent.tools import Tools

    path = tmp_path / "chained.py"
    path.write_text(CHAINED_COMPARISON)
    state = {"task": str(path), "base": str(path), "target": "cuda:sm90", "level": 1}
    runtime = SimpleNamespace(context=SimpleNamespace(budget=Budget(), tools=Tools(str(tmp_path))))
    reason = nodes.inspect_ir(state, runtime)["trace"][0]["reason"]
    assert "does not compile for cuda:sm90: double_kernel: simultaneous multiple comparison is not supported" in reason


def test_a_repair_is_best_at_any_score_and_ranks_first():
    """Where the task as given does not compile for the target, a passed candidate that does is worth
    handing back even with nothing to estimate (the original has no time to compare with)."""
    why = "the task as given does not compile for cuda:sm90: simultaneous multiple comparison"
    repaired = result("fixed", verdict_json(True), repairs=why)
    assert policy.best_result([repaired])["candidate"]["id"] == "fixed"
    assert policy.best_result([result("faster", verdict_json(True), predicted=1.5), repaired])["candidate"]["id"] == (
        "fixed"
    )
    assert policy.best_result([result("fixed", verdict_json(False), repairs=why)]) is None
    from diagnose.records import candidate_from_dict

    assert candidate_from_dict(repaired["candidate"]).repairs == why
    assert "repairs" not in result("plain", verdict_json(True))["candidate"]
    # built on the repair, a candidate repairs too; it displaces its base only by a gain past the margin
    chained = [repaired, result("fixed-tiny", verdict_json(True), predicted=1.01, repairs=why)]
    assert policy.best_result(chained)["candidate"]["id"] == "fixed"
    chained.append(result("fixed-more", verdict_json(True), predicted=1.4, repairs=why))
    assert policy.best_result(chained)["candidate"]["id"] == "fixed-more"
    assert policy.base_repairs({"results": [repaired], "best": "fixed"}) == why
    assert policy.base_repairs({"results": [], "best": None}) is None


def test_estimates_name_a_candidate_that_compiles_where_the_task_as_given_does_not(tmp_path):
    """The static estimate compiles the original and the candidate for the target: the chained
    comparison does not compile for sm_90, the same kernel with `&` does, and that is a repair."""
    from diagnose.optimizer.pipeline import _search_options, context_for, estimate_gains

    path = tmp_path / "chained.py"
    path.write_text(CHAINED_COMPARISON)
    repaired = CHAINED_COMPARISON.replace("if 0 <= pid < n:", "if (0 <= pid) & (pid < n):")
    ctx = context_for(path, (), (), "cuda:sm90")
    found = estimate_gains(ctx, [repaired, CHAINED_COMPARISON], _search_options(path, "cpu", 1))
    assert list(found.repairs) == [0] and not found.broken
    assert found.repairs[0].startswith("the task as given does not compile for cuda:sm90: ")
    assert "simultaneous multiple comparison" in found.repairs[0]


def test_a_kernel_that_does_not_compile_goes_on_to_be_repaired():
    """A baseline that failed for its Triton kernel's compile error (the interpreter rejects a block
    size that is not tl.constexpr too) is not the end: candidates are proposed and, passing, are
    repairs; only if none passes does the run end as broken. Host code that raises still ends it."""
    from diagnose.agent.graph import route_after_baseline

    message = 'InterpreterError: ValueError("arange\'s arguments must be of type tl.constexpr") (at k.py:9)'
    failed = verdict_json(False, failure=Failure("exception", message))
    assert route_after_baseline({"baseline": failed}) == "triage"
    assert policy.repairable(verdict_from_dict(failed)) == f"the task as given does not run: {message}"
    assert policy.broken_task(verdict_from_dict(failed)) is None
    assert policy.broken_task(verdict_from_dict(failed), repaired=True) is None
    assert policy.broken_task(verdict_from_dict(failed), repaired=False).startswith("the task as given does not run")
    state = {"baseline": failed, "results": [], "best": None}
    assert policy.base_repairs(state) == policy.repairable(verdict_from_dict(failed))
    host = verdict_json(False, failure=Failure("exception", "RuntimeError: shapes differ"))
    assert policy.repairable(verdict_from_dict(host)) is None
    assert policy.repairable(verdict_from_dict(verdict_json(False, failure=Failure("timeout", message)))) is None
