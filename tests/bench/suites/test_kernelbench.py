"""KernelBench adapter: problems matched to solutions by name, scored by the harness, fast_p, tolerances."""

import pytest

from diagnose.bench import report
from diagnose.bench.suites import kernelbench
from diagnose.bench.sweep import SweepOptions
from diagnose.errors import UsageError
from tests.bench.suites.conftest import SUITES, failure, run_sweep

SUITE = SUITES / "kernelbench" / "suite"
SOLUTIONS = SUITES / "kernelbench" / "solutions"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    db = tmp_path_factory.mktemp("kb") / "r.sqlite"
    return run_sweep("kernelbench", SUITE, db, solutions=SOLUTIONS)


def test_solutions_are_matched_by_path_stem_and_run_name():
    tasks = {t.entry.id: t for t in kernelbench.load(SUITE, SweepOptions(solutions=SOLUTIONS))}
    assert tasks["level1/1_Add"].solution == SOLUTIONS / "level1" / "1_Add.py"
    assert tasks["level1/2_ReLU"].solution == SOLUTIONS / "2_ReLU.py"
    assert tasks["level1/3_Scale"].solution.name == "level_1_problem_3_sample_0_kernel.py"
    assert tasks["level1/5_Unsolved"].solution is None
    assert tasks["level2/1_Sigmoid"].entry.level == 2


@pytest.mark.slow
def test_sweep_scores_each_problem_and_goes_past_broken_ones(swept):
    summary, rows = swept
    assert (summary.ran, summary.failed) == (6, 3)
    status = {entry: [r.status for r in rs] for entry, rs in rows.items()}
    assert status["level1/1_Add"] == status["level1/2_ReLU"] == status["level1/3_Scale"] == ["passed"]
    assert "has no `get_inputs`" in failure(rows["level1/4_NoInputs"])
    assert "no solution for it in" in failure(rows["level1/5_Unsolved"])
    assert {r.suite for rs in rows.values() for r in rs} == {"kernelbench:suite"}


def test_default_tolerance_rejects_an_fp16_solution(swept):
    [row] = swept[1]["level2/1_Sigmoid"]
    assert row.status == "failed" and not row.data["correct"]
    assert any("outside atol=0.0001" in reason for reason in row.data["reasons"])


@pytest.mark.slow
def test_kernelbench_tolerance_profile_accepts_it(tmp_path):
    summary, rows = run_sweep(
        "kernelbench", SUITE, tmp_path / "r.sqlite", solutions=SOLUTIONS, pattern="Sigmoid", tolerance="kernelbench-v0"
    )
    assert summary.failed == 0
    assert [r.status for r in rows["level2/1_Sigmoid"]] == ["passed"]
    assert "tolerance kernelbench-v0" in rows["level2/1_Sigmoid"][0].version


def test_fast_p_on_the_cpu_is_correctness_only(swept):
    data = kernelbench.summary([r for rs in swept[1].values() for r in rs])
    assert data["problems"] == 6 and data["correct"] == 3
    assert data["fast_p"]["eager"] == {"0.0": 0.5, "0.5": None, "0.8": None, "1.0": None, "1.5": None, "2.0": None}
    assert "fast_0" in kernelbench.render_summary(data)


def test_fast_p_counts_over_all_problems():
    from diagnose.bench.store import Row

    def row(entry, status, eager, compile_):
        return Row(
            "kernelbench:s",
            entry,
            "default",
            "score",
            "v",
            status,
            {"speedup_vs_eager": eager, "speedup_vs_compile": compile_},
            0.0,
        )

    rows = [
        row("a", "passed", 2.5, 1.2),
        row("b", "passed", 1.2, 0.8),
        row("c", "failed", 9.0, 9.0),
        row("d", "passed", 0.5, 0.4),
    ]
    assert kernelbench.fast_p(rows, "eager") == {
        "0.0": 0.75,
        "0.5": 0.5,
        "0.8": 0.5,
        "1.0": 0.5,
        "1.5": 0.25,
        "2.0": 0.25,
    }
    assert kernelbench.fast_p(rows, "compile") == {
        "0.0": 0.75,
        "0.5": 0.5,
        "0.8": 0.25,
        "1.0": 0.25,
        "1.5": 0.0,
        "2.0": 0.0,
    }


def test_token_side_file_reaches_the_report(swept):
    rows = [r for rs in swept[1].values() for r in rs]
    [relu] = swept[1]["level1/2_ReLU"]
    assert relu.data["tokens"] == {"prompt": 1200, "completion": 800, "requests": 2, "verified": 1}
    assert "tokens" not in swept[1]["level1/1_Add"][0].data
    tokens = report.summary(rows)["tokens"]
    assert tokens["tasks"] == 1 and tokens["per_task"] == 2000 and tokens["per_verified_success"] == 2000
    text = report.render(rows, "md")
    assert "2000 tokens over 1 tasks" in text


def test_a_sweep_without_llm_says_so():
    from diagnose.bench.store import Row

    rows = [Row("s", "a", "g", "score", "v", "passed", {"timed": False}, 0.0)]
    assert "no LLM used" in report.render(rows, "md")
    assert report.summary(rows)["tokens"] == {"llm_used": False, "note": "no LLM used"}


def test_without_solutions_each_problem_is_its_own_candidate():
    tasks = {t.entry.id: t for t in kernelbench.load(SUITE, SweepOptions())}
    assert tasks["level1/5_Unsolved"].problem is None and tasks["level1/5_Unsolved"].solution is None
    with pytest.raises(UsageError, match="not a folder of solutions"):
        kernelbench.load(SUITE, SweepOptions(solutions=SUITE / "nowhere"))
