"""The run report's renderings from constructed reports (no agent run): the JSON a run writes (checked
against the schema) read back as a `Report`; the HTML page's roofline SVG, evidence with source lines and
trace; the no-timing case; the summary table; `diagnose report` in every format."""

import dataclasses
import json

import pytest

from diagnose.records import report_from_dict

from diagnose.report.html import render_html
from diagnose.report.markdown import render_markdown
from diagnose.report.reports import validate
from diagnose.report.roofline_plot import roofline_plot
from diagnose.report.sarif import report_sarif
from diagnose.report.summary import summary_text
from tests.conftest import run_cli, run_cli_here

TASK_LINES = [
    "import triton",
    "",
    "    x = tl.load(x_ptr + offs)  # the flagged line",
    "    tl.store(out_ptr + offs, x)",
]


def timing(variant, median, group="g"):
    return {
        "variant": variant,
        "group": group,
        "median_ms": median,
        "p20_ms": median,
        "p80_ms": median,
        "iqr_ms": 0.0 if median else None,
        "cv": 0.01 if median else None,
        "reps": 100 if median else 0,
        "stable": bool(median),
        "note": "" if median else "not timed: no device here",
    }


def verdict(timings, passed=True):
    checks = [{"name": "ghost_replay", "passed": passed, "detail": ""}]
    return {
        "passed": passed,
        "device": "cuda",
        "cases": [],
        "checks": checks,
        "timings": timings,
        "failure": None,
        "versions": [],
        "notes": [],
        "phases": [["candidate", 1.5], ["total", 3.0]],
    }


def candidate(id_, made_by, predicted=None):
    return {
        "id": id_,
        "source": "",
        "diff": f"--- a\n+++ b\n@@ -1 +1 @@\n-old {id_}\n+new {id_}\n",
        "made_by": made_by,
        "safety": "safe",
        "answers": ["TRI001@task.py:3"],
        "predicted_gain": predicted,
        "searched": [],
        "lineage": made_by,
    }


def evidence(path, line, name="GlobalAccessWidth"):
    return {
        "stage": "ir",
        "source": "ptx",
        "name": name,
        "kind": "missed",
        "location": {"path": path, "line": line, "col": 4, "end_line": None, "end_col": None},
        "args": [["bits", 32]],
        "raw": None,
    }


def make_report(task_path, timed=True):
    path = str(task_path)
    ms = (lambda value: value) if timed else (lambda value: None)
    finding = {
        "code": "PRF001",
        "message": "Memory-bound: 25% of the roofline",
        "severity": "warning",
        "confidence": "medium",
        "location": evidence(path, 3)["location"],
        "evidence": [evidence(path, 3, "Roofline")],
        "secondary": [],
        "rewrites": [],
    }
    triage = {
        **finding,
        "code": "TRI001",
        "message": "Load is not coalesced",
        "evidence": [evidence(path, 4, "Strided")],
    }
    return {
        "schema_version": 1,
        "task": path,
        "target": "cuda:sm90",
        "device": "cuda" if timed else "cpu",
        "findings": [finding, triage],
        "trace": [
            {"level": "baseline", "action": "verify the task as given", "reason": "passed=True", "at": 1.0},
            {
                "level": "profile",
                "action": "roofline and bottleneck",
                "reason": "25% of the roofline bound on g",
                "at": 2.5,
            },
        ],
        "candidates": [
            {
                "candidate": candidate("widen-abc", ["vectorization-hints"], 1.8),
                "verdict": verdict(
                    [timing("candidate", ms(1.0)), timing("initial", ms(2.0)), timing("eager", ms(1.5))]
                ),
            },
            {
                "candidate": candidate("tile-def", ["two-level-tiling"], 3.0),
                "verdict": verdict([timing("candidate", None)], passed=False),
            },
        ],
        "best": "widen-abc",
        "environment": [["diagnose", "0"]],
        "baseline": verdict([timing("candidate", ms(2.0)), timing("eager", ms(1.5)), timing("compile", ms(1.2))]),
        "evidence": [evidence(path, 3)],
        "roofline": {
            "work": [
                {
                    "group": "g",
                    "bytes": 1.5e9,
                    "flops": 0.0,
                    "dtype": "float32",
                    "bytes_source": "inputs+outputs",
                    "flops_source": "none",
                }
            ],
            "roof": {"bytes_per_s": 3e12, "flops_per_s": 6e14, "dtype": "float32", "measured": True},
            "timed": timed,
            "profiled": "task",
            "estimate_ms": {"g": 0.8},
            "bound_ms": 0.5,
            "group": "g",
        },
        "deepest_level": "profile",
        "wall_s": 12.5,
    }


def make_record(task_path, timed=True):
    """`make_report` as the renderers take it: a `Report`, read back from its JSON."""
    return report_from_dict(make_report(task_path, timed))


@pytest.fixture
def task_file(tmp_path):
    path = tmp_path / "task.py"
    path.write_text("\n".join(TASK_LINES) + "\n")
    return path


def test_constructed_reports_follow_the_schema(task_file):
    validate(make_report(task_file))
    validate(make_report(task_file, timed=False))


def test_a_report_reads_back_from_its_json_unchanged(task_file):
    for timed in (True, False):
        data = make_report(task_file, timed)
        assert json.dumps(make_record(task_file, timed).to_dict()) == json.dumps(data)  # keys, values, order


def test_html_has_the_roofline_with_every_timed_variant_and_the_evidence_with_its_line(task_file):
    report = make_record(task_file)
    plot = roofline_plot(report)
    assert [label for label, _ in plot.points] == ["initial", "eager", "compile", "widen-abc"]
    assert not plot.estimated
    assert {label: round(p.fraction, 3) for label, p in plot.points} == {
        "initial": 0.25,
        "eager": 0.333,
        "compile": 0.417,
        "widen-abc": 0.5,
    }
    page = render_html(report)
    assert page.count("<svg") == 1 and "<?xml" not in page and "<script" not in page
    svg = page[page.index("<svg") : page.index("</svg>")]
    for label in ("initial [g] 25%", "eager [g] 33%", "compile [g] 42%", "widen-abc [g] 50%"):
        assert label in svg, label  # matplotlib keeps every text as a comment beside its glyphs
    assert "25% of the roofline bound on g" in page  # the trace
    assert "task.py:3</b> <code class='src'>x = tl.load(x_ptr + offs)  # the flagged line</code>" in page
    assert "missed GlobalAccessWidth [ptx] (bits=32)" in page
    assert "failed: ghost_replay" in page and "+new tile-def" in page  # verdicts and diffs
    assert "<td>vectorization-hints</td><td>TRI001@task.py:3</td>" in page  # what each candidate answers


def test_markdown_has_the_same_sections_and_links_the_plot(task_file):
    text = render_markdown(make_record(task_file), "roofline.svg")
    for heading in ("## Roofline", "## Escalation trace", "## Findings", "## Evidence by source line", "## Candidates"):
        assert heading in text
    assert "![roofline](roofline.svg)" in text and "<svg" not in text
    assert "- task.py:3: `x = tl.load(x_ptr + offs)  # the flagged line`" in text
    assert "| widen-abc | vectorization-hints | TRI001@task.py:3 | safe | passed | 1 ms | 2.00x |" in text


def test_without_timings_the_report_says_so_and_plots_the_estimate(task_file):
    report = make_record(task_file, timed=False)
    plot = roofline_plot(report)
    assert plot.estimated and [label for label, _ in plot.points] == ["task (estimate)"]
    page = render_html(report)
    assert "Nothing was timed" in page and "every gain shown is an estimate" in page
    assert "task (estimate) [g] 62%" in page and "(estimated)" in page
    report = dataclasses.replace(report, roofline=None)
    page = render_html(report)
    assert "Nothing to plot" in page and "<svg" not in page
    assert "Nothing to plot" in render_markdown(report)


def test_summary_table_lists_each_candidate(task_file):
    text = summary_text(make_record(task_file))
    assert (
        "passed, best" in text
        and "widen-abc" in text
        and "vectorization-hints" in text
        and "2.00x" in text
        and "1 ms" in text
    )
    assert "tile-def" in text and "failed: ghost_replay" in text
    assert "TRI001@task.py:3" in text  # the finding each candidate answers
    untimed = summary_text(make_record(task_file, timed=False))
    assert "nothing timed" in untimed and "1.80x (estimate)" in untimed


def test_sarif_carries_findings_of_every_level(task_file):
    log = report_sarif(make_record(task_file), task_file.parent)
    results = log["runs"][0]["results"]
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    assert sorted(r["ruleId"] for r in results) == ["PRF001", "TRI001"]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "task.py"


@pytest.mark.slow
def test_report_command_renders_a_finished_run_in_every_format(task_file, tmp_path):
    folder = tmp_path / "cache" / "runs" / "run-1"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(make_report(task_file)))
    env = {"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")}
    expected = {
        "json": '"best": "widen-abc"',
        "md": "## Escalation trace",
        "html": "<svg",
        "sarif": '"ruleId": "PRF001"',
    }
    # One format as a user runs it (a process of its own), the others in this process: each command is a
    # fresh interpreter's imports otherwise (7 commands took 45 s of CI's two cores).
    sarif = run_cli("report", "run-1", "--format", "sarif", env=env, timeout=120)
    assert sarif.returncode == 0 and json.loads(sarif.stdout)["version"] == "2.1.0", sarif.stderr[-2000:]
    for fmt, needle in expected.items():
        result = sarif if fmt == "sarif" else run_cli_here("report", "run-1", "--format", fmt, env=env)
        assert result.returncode == 0, (fmt, result.stderr[-2000:])
        assert needle in result.stdout, fmt
    bad = run_cli_here("report", "run-1", "--format", "pdf", env=env)
    assert bad.returncode == 2 and "unknown format" in bad.stderr
    missing = run_cli("report", "nope", env=env)
    assert missing.returncode == 2 and "no run 'nope' in " in missing.stderr
