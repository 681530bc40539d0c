"""Sweeps resume after being killed; the store keeps one row per entry x group x mode x version; reports."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from diagnose.bench import report, store
from diagnose.bench.sweep import SweepOptions, sweep
from tests.conftest import FIXTURES, ROOT


@pytest.fixture
def small_suite(tmp_path):
    suite = tmp_path / "mini"
    (suite / "level1").mkdir(parents=True)
    for name in ("honest", "torch_only", "caches_output"):
        shutil.copy(FIXTURES / "cheats" / f"{name}.py", suite / "level1" / f"{name}.py")
    return suite


@pytest.mark.slow
def test_entries_past_start_within_wait_for_the_next_sweep(small_suite, tmp_path):
    db = tmp_path / "r.sqlite"
    seen = []
    none = sweep(small_suite, db, SweepOptions(seeds=2, start_within_s=0.0), lambda e, outcome: seen.append(outcome))
    assert (none.ran, none.left, none.failed) == (0, 3, 0) and set(seen) == {"not started (past --start-within)"}
    assert store.rows(store.connect(db)) == [], "nothing written for an entry that did not start"
    # the first entry starts at once; the next ones, queued behind it on one job, start past the limit
    # (an entry's verification takes well over 0.2 s: several worker jobs, each a process)
    some = sweep(small_suite, db, SweepOptions(seeds=2, start_within_s=0.2))
    assert (some.ran, some.left) == (1, 2)


@pytest.mark.slow
def test_sweep_records_each_entry_once_and_skips_done_ones(small_suite, tmp_path):
    db = tmp_path / "r.sqlite"
    first = sweep(small_suite, db, SweepOptions(seeds=2, jobs=2))
    assert (first.ran, first.skipped, first.failed) == (3, 0, 2)
    status = {r.entry: r.status for r in store.rows(store.connect(db))}
    assert status == {"level1/honest": "passed", "level1/torch_only": "failed", "level1/caches_output": "failed"}
    honest = next(r for r in store.rows(store.connect(db)) if r.entry == "level1/honest")
    assert [step for step, _ in honest.data["phases"]][-1] == "total", "rows say where the time went"
    again = sweep(small_suite, db, SweepOptions(seeds=2))
    assert (again.ran, again.skipped) == (0, 3)
    # A changed entry has a new version: it alone is run again.
    path = small_suite / "level1" / "honest.py"
    path.write_text(path.read_text() + "\n# edited\n")
    third = sweep(small_suite, db, SweepOptions(seeds=2))
    assert (third.ran, third.skipped) == (1, 2)


def test_an_entrys_new_version_replaces_every_row_of_its_old_ones(tmp_path):
    """matmul_split_k failed as a whole ("*") before its inputs were scaled, then passed per group."""
    connection = store.connect(tmp_path / "r.sqlite")
    store.write_entry(connection, "s", "level3/split_k", "optimize", "old", [("*", "failed", {"reasons": ["wrong"]})])
    store.write_entry(connection, "s", "level1/abs", "optimize", "v", [("g", "passed", {})])
    time.sleep(0.01)
    store.write_entry(
        connection, "s", "level3/split_k", "optimize", "new", [("m1", "passed", {}), ("m2", "passed", {})]
    )
    rows = store.rows(connection)
    assert [(r.entry, r.group, r.version) for r in rows] == [
        ("level1/abs", "g", "v"),
        ("level3/split_k", "m1", "new"),
        ("level3/split_k", "m2", "new"),
    ]
    assert store.is_done(connection, "s", "level3/split_k", "optimize", "old"), "history stays in the store"


@pytest.mark.slow
def test_killed_sweep_resumes_where_it_stopped(small_suite, tmp_path):
    db = tmp_path / "r.sqlite"
    command = [sys.executable, "-m", "diagnose.cli", "bench", str(small_suite), "--seeds", "2", "--store", str(db)]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            try:
                done = sqlite3.connect(db).execute("SELECT COUNT(DISTINCT entry) FROM results").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
            if done >= 1:
                break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 1 <= done < 3, "the sweep should be killed after its first entry"
    before = {r.entry: r.created for r in store.rows(store.connect(db))}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1  # two cheats fail
    after = {r.entry: r.created for r in store.rows(store.connect(db))}
    assert len(after) == 3
    for entry, created in before.items():
        assert after[entry] == created, f"{entry} was redone"
    assert f"{len(before)} already done" in result.stderr


def timed_row(entry, group, eager, compile_, status="passed"):
    return store.Row(
        "s",
        entry,
        group,
        "score",
        "v",
        status,
        {
            "correct": status == "passed",
            "medians_ms": {"candidate": 1.0, "eager": eager, "compile": compile_},
            "speedup_vs_eager": eager,
            "speedup_vs_compile": compile_,
            "timed": True,
            "reasons": [],
            "failed_checks": [],
        },
        0.0,
    )


def test_distribution_metrics():
    failed = timed_row("d", "g", 9.0, 9.0, status="failed")
    failed.data["failed_checks"] = ["ghost_replay: still correct"]
    rows = [timed_row("a", "g", 4.0, 1.0), timed_row("b", "g", 0.8, 0.5), timed_row("c", "g", 6.0, 3.0), failed]
    data = report.summary(rows)
    eager = data["distribution"][0]
    assert eager["timed_correct"] == 3 and eager["geomean"] == pytest.approx(19.2 ** (1 / 3))
    assert eager["median"] == 4.0 and eager["above_2x"] == 2 and eager["above_5x"] == 1
    assert eager["fast_p"] == {"1.0": 0.5, "1.5": 0.5, "2.0": 0.5}  # 2 of all 4 rows
    assert data["fast_0"] == 0.75  # correct, of all 4 rows
    assert "3 passed, 1 failed; fast_0 (correct of all rows) 0.75." in report.render(rows, "md")
    assert {r["entry"]: r["why"] for r in data["not_improved"]} == {
        "b": "slower than eager (0.8x)",
        "d": "ghost_replay: still correct",
    }


def test_an_optimized_row_that_gained_but_trails_eager_says_both():
    gained = store.Row(
        "s",
        "mm",
        "g",
        "optimize",
        "v",
        "passed",
        {
            "correct": True,
            "timed": True,
            "speedup_vs_initial": 24.4,
            "speedup_vs_eager": 0.864,
            "reasons": [],
            "failed_checks": [],
        },
        0.0,
    )
    assert report.why_not(gained) == "24.4x over the initial kernel, slower than eager (0.864x)"
    unchanged = store.Row("s", "mm", "g", "optimize", "v", "passed", {**gained.data, "speedup_vs_initial": 1.0}, 0.0)
    assert report.why_not(unchanged) == "slower than eager (0.864x)"
    assert "## Not improved, or slower than eager, and why" in report.render([gained], "md")


def test_a_timed_row_without_an_eager_baseline_says_so():
    # e.g. a PR task timed end to end: there is no eager to be slower than.
    row = timed_row("e2e", "g", None, None)
    assert report.why_not(row) == "no eager baseline timed"


def test_an_optimized_row_that_gained_with_no_eager_to_beat_is_not_listed_as_not_improved():
    # TritonBench-G: the reference is the module's own code, so there is no eager; a 2.16x gain is no miss.
    gained = store.Row(
        "s",
        "add_example",
        "g",
        "optimize",
        "v",
        "passed",
        {
            "correct": True,
            "timed": True,
            "speedup_vs_initial": 2.16,
            "speedup_vs_eager": None,
            "reasons": [],
            "failed_checks": [],
        },
        0.0,
    )
    assert report.why_not(gained) == ""
    unchanged = store.Row("s", "scale", "g", "optimize", "v", "passed", {**gained.data, "speedup_vs_initial": 1.0}, 0.0)
    assert report.why_not(unchanged) == "no eager baseline timed"


@pytest.mark.parametrize("fmt, marker", [("md", "| entry |"), ("csv", "entry,group"), ("html", "<svg"), ("json", "{")])
def test_report_formats(fmt, marker):
    text = report.render([timed_row("a", "g", 2.0, 1.5), timed_row("b", "g", 0.5, 0.4)], fmt)
    assert marker in text
    if fmt == "json":
        assert json.loads(text)["passed"] == 2


@pytest.mark.slow
def test_optimize_mode_runs_the_agent_and_keeps_the_suite_folder_as_it_was(small_suite, tmp_path, monkeypatch):
    from diagnose.agent.state import Budget

    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    before = sorted(p.name for p in small_suite.rglob("*"))
    db = tmp_path / "r.sqlite"
    options = SweepOptions(mode="optimize", seeds=2, budget=Budget(max_candidates=1))
    summary = sweep(small_suite, db, options)
    assert (summary.ran, summary.failed) == (3, 2)  # the two cheats fail their baseline
    assert sorted(p.name for p in small_suite.rglob("*")) == before, "outputs go beside the store"
    rows = {r.entry: r for r in store.rows(store.connect(db), mode="optimize")}
    assert rows["level1/torch_only"].status == "failed"
    honest = rows["level1/honest"]
    assert honest.status == "passed" and honest.data["deepest_level"] in ("triage", "profile", "ir", "passes")
    assert honest.data["run_id"] and not honest.data["timed"]  # CPU: verified, not timed
    run = json.loads((tmp_path / "cache" / "runs" / honest.data["run_id"] / "report.json").read_text())
    assert {case["seed"] for case in run["baseline"]["cases"]} == {0, 1}, "the sweep's --seeds reach the agent"
    again = sweep(small_suite, db, options)
    assert again.ran == 0, "a finished entry is not optimized again"


def test_optimize_rows_carry_medians_speedups_and_roofline():
    from diagnose.bench.optimize import rows_from_report

    def timing(variant, ms):
        return {"variant": variant, "group": "g", "median_ms": ms}

    # a case at unseen sizes belongs to its group's row
    baseline = {
        "passed": True,
        "cases": [{"group": "g"}, {"group": "g@N=1001"}],
        "checks": [],
        "timings": [timing("candidate", 4.0), timing("eager", 2.0), timing("compile", 1.5)],
    }
    best = {
        "candidate": {"id": "c1", "made_by": ["retune-launch"], "answers": ["TRI001@k.py:12"]},
        "verdict": {
            "passed": True,
            "timings": [timing("candidate", 1.0), timing("initial", 4.2), timing("eager", 2.1)],
        },
    }
    report = {
        "baseline": baseline,
        "candidates": [best],
        "best": "c1",
        "deepest_level": "profile",
        "roofline": {"bound_ms": 0.8, "group": "g"},
    }
    [(group, status, data)] = rows_from_report(report, "run1")
    assert (group, status) == ("g", "passed")
    # the initial kernel's median from the best candidate's own run, beside it (4.2), not the baseline's (4.0)
    assert data["medians_ms"] == {"initial": 4.2, "candidate": 1.0, "compile": 1.5}
    assert data["speedup_vs_initial"] == pytest.approx(4.2) and data["speedup_vs_eager"] == pytest.approx(2.1)
    assert data["speedup_vs_compile"] == pytest.approx(1.5) and data["roofline_fraction"] == pytest.approx(0.8)
    assert data["rewrites"] == ["retune-launch"] and data["deepest_level"] == "profile"
    [line] = report_module_lines([("g", status, data)])
    report["roofline"] = {"bound_ms": 0.5, "group": "h", "bounds_ms": {"g": 0.9, "h": 0.5}}  # every group's bound
    [(_, _, data)] = rows_from_report(report, "run1")
    assert data["roofline_fraction"] == pytest.approx(0.9)
    assert (line.initial_ms, line.optimized_ms, line.deepest_level) == (4.2, 1.0, "profile")
    assert line.rewrites == "retune-launch [answers TRI001@k.py:12]"


def test_an_entry_that_fails_as_given_says_what_failed():
    from diagnose.bench.optimize import rows_from_report

    ghost = {
        "passed": False,
        "cases": [{"group": "g", "passed": True}],
        "checks": [{"name": "ghost_replay", "passed": False, "detail": "still correct with no-op launches"}],
    }
    [(_, status, data)] = rows_from_report({"baseline": ghost, "candidates": [], "best": None}, "run1")
    assert status == "failed"
    assert data["failure"]["message"] == (
        "the entry as given fails verification: ghost_replay: still correct with no-op launches"
    )
    wrong = {
        "passed": False,
        "checks": [],
        "cases": [{"group": "g", "passed": True}, {"group": "g", "passed": False, "reason": "12 NaN where ..."}],
    }
    [(_, _, data)] = rows_from_report({"baseline": wrong, "candidates": [], "best": None}, "run1")
    assert data["failure"]["message"] == "the entry as given fails verification: 12 NaN where ..."


def report_module_lines(groups):
    rows = [store.Row("s", "e", g, "optimize", "v", status, data, 0.0) for g, status, data in groups]
    return report.lines(rows)


@pytest.mark.slow
def test_report_cli(cli, small_suite, tmp_path):
    db = tmp_path / "r.sqlite"
    assert cli("bench", "report", "--store", str(db)).returncode == 2
    sweep(small_suite, db, SweepOptions(seeds=2, pattern="honest"))
    result = cli("bench", "report", "--store", str(db), "--format", "csv")
    assert result.returncode == 0 and "level1/honest" in result.stdout


@pytest.mark.parametrize(
    "candidates, trace, expected",
    [
        (
            [],
            [{"reason": "not verified (wall time over 170 s): a-retune, a-autotune"}],
            "2 proposed candidate(s) left unverified (wall time over 170 s)",
        ),
        (
            [],
            [{"reason": "b-x: FAILED; not verified (wall time over 60 s): b-y"}],
            "1 proposed candidate(s) left unverified (wall time over 60 s)",
        ),
        ([], [{"reason": "nothing untried"}], "no rewrite was proposed for its findings"),
        (
            [],
            [
                {
                    "level": "profile",
                    "action": "propose rewrites",
                    "reason": "nothing proposed: the task as given reaches "
                    "97% of the roofline bound on every input group (farthest: g)",
                },
                {"level": "profile", "action": "decide: finish", "reason": "budget spent: wall time over 180 s"},
            ],
            "nothing proposed: the task as given reaches 97% of the roofline bound on every input group",
        ),
        (
            [],
            [
                {"level": "triage", "action": "propose rewrites", "reason": "nothing untried"},
                {"level": "triage", "action": "decide: finish", "reason": "budget spent: wall time over 180 s"},
            ],
            "wall time over 180 s at the triage level, before any rewrite was proposed",
        ),
        (
            [],
            [
                {
                    "reason": "nothing untried; searched, the current values kept: launch-options: 6 configs, 5 after IR "
                    "pruning, ranked by time on cuda (harness medians; the first 6 of the search space); chose "
                    "num_warps=4, num_stages=3"
                }
            ],
            "launch-options searched 6 launch configurations and kept the current num_warps=4, num_stages=3 (ranked by time",
        ),
        (
            [],
            [
                {
                    "reason": "nothing untried; searched, the current values kept: launch-options: 1 configs, 1 after IR "
                    "pruning, ranked by the current values (launch-options is chosen by timing only; nothing is timed "
                    "on cpu); chose num_warps=4"
                }
            ],
            "launch-options kept the current num_warps=4: launch-options is chosen by timing only; nothing is timed on cpu",
        ),
        ([{"candidate": {"id": "c"}, "verdict": {"passed": False}}], [], "no candidate passed verification"),
        (
            [
                {
                    "candidate": {"id": "c"},
                    "verdict": {
                        "passed": True,
                        "timings": [
                            {"variant": "candidate", "group": "g", "median_ms": 0.30},
                            {"variant": "initial", "group": "g", "median_ms": 0.29},
                        ],
                    },
                },
                {"candidate": {"id": "d"}, "verdict": {"passed": False}},
            ],
            [],
            "1 candidate(s) passed, none faster than the task as given (the fastest 0.97x)",
        ),
    ],
)
def test_an_unimproved_entry_says_why(candidates, trace, expected):
    from diagnose.bench.optimize import why_unimproved

    assert why_unimproved({"candidates": candidates, "trace": trace}).startswith(expected)


def test_stored_optimize_rows_are_rebuilt_from_the_run_reports(tmp_path):
    """The session-7 store said "no rewrite was proposed" for math_abs; its report says why: at the roof."""
    import importlib.util

    run_id = "20261203-113638-c98cf3"
    runs = tmp_path / "runs" / run_id
    runs.mkdir(parents=True)
    shutil.copy(
        ROOT
        / "benchmarks"
        / "results"
        / "2026-12-03-h200-npukernel-sweep"
        / "3-optimize-25-entries"
        / "runs"
        / run_id
        / "report.json",
        runs,
    )
    db = tmp_path / "r.sqlite"
    stale = {"run_id": run_id, "reasons": ["no rewrite was proposed for its findings; the entry stays as given"]}
    store.write_entry(
        store.connect(db),
        "s",
        "level1/math_abs",
        "optimize",
        "v1",
        [("x8192x16384_fp32", "passed", stale), ("x16384x16384_fp16", "passed", stale)],
    )
    store.write_entry(
        store.connect(db),
        "s",
        "level1/other",
        "optimize",
        "v1",
        [("g", "passed", {"run_id": "gone", "reasons": ["kept"]})],
    )
    spec = importlib.util.spec_from_file_location("refresh", ROOT / "benchmarks" / "refresh_optimize_rows.py")
    refresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(refresh)
    assert refresh.refresh(str(db), [str(tmp_path / "runs")]) == 1
    rows = {(r.entry, r.group): r for r in store.rows(store.connect(db), mode="optimize")}
    assert rows[("level1/other", "g")].data["reasons"] == ["kept"], "an entry without its report stays"
    mine = [r for (entry, _), r in rows.items() if entry == "level1/math_abs"]
    assert {r.group for r in mine} == {"x8192x16384_fp32", "x16384x16384_fp16", "x4096x32768_bf16"}
    assert all(
        r.version == "v1"
        and r.data["reasons"][0].startswith("nothing proposed: the task as given reaches 97% of the roofline bound")
        for r in mine
    )
    assert refresh.refresh(str(db), [str(tmp_path / "runs")]) == 0, "a second pass changes nothing"


def test_a_bug_of_ours_on_one_entry_is_its_row_and_the_sweep_goes_on(tmp_path):
    """An exception out of the agent (once a SyntaxError reading a TritonBench kernel) ended a whole
    device sweep: now it is that entry's `internal_error` row and the others run."""
    from pathlib import Path

    from diagnose.bench.suite import Entry
    from diagnose.bench.sweep import run_entries

    entries = [Entry(name, Path(f"{name}.py"), None, "", "", name) for name in ("a", "b", "c")]

    def score_one(entry):
        if entry.id == "b":
            raise SyntaxError("invalid syntax")
        return [("*", "passed", {})]

    db = tmp_path / "r.sqlite"
    summary = run_entries("s", entries, score_one, db, SweepOptions(jobs=2), None)
    assert (summary.ran, summary.failed) == (3, 1)
    rows = {r.entry: r for r in store.rows(store.connect(db))}
    assert rows["a"].status == rows["c"].status == "passed"
    assert rows["b"].data["failure"] == {
        "kind": "internal_error",
        "message": "SyntaxError: invalid syntax",
        "log_tail": "",
    }
