"""DataKernelBench's harness tasks: the Triton cores of `benchmarks/datakernel/kernels/` verified on the
Triton interpreter against their TorchPlans, core and full, through the adapter's task files; the
adapter's listing, fallback scoring and command-line errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from diagnose.bench.store import Row
from diagnose.bench.suites import datakernel
from diagnose.bench.sweep import SweepOptions
from diagnose.verify.harness import CheckOptions, verify
from tests.conftest import run_cli_here

KERNELS = ("q01", "q03", "q05", "q06", "q10", "q12", "q14", "q19")
OPTIONS = SweepOptions(suite_format="datakernel", scale_factor=0.01, seeds=2)


@pytest.fixture
def tasks(tpch_root, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_DATAKERNEL_DIR", str(tpch_root))
    return {t.entry.id: t for t in datakernel.load(datakernel.default_root(), OPTIONS)}


def verdict_of(task, folder: Path, scratch: Path):
    """The harness's verdict on a task's kernel on the interpreter (a short soak: CI time)."""
    from diagnose.bench.suites.tolerance import overrides
    from diagnose.task import load_task

    reference, candidate = datakernel.task_files(task, folder, scratch)
    return verify(
        load_task(reference, candidate),
        CheckOptions(device="cpu", seeds=(0, 1), soak=2, unseen_shapes=False, tolerances=overrides("datakernel")),
    )


def test_the_suite_lists_a_core_and_a_full_task_per_query(tasks):
    assert len(tasks) == 44
    assert sorted(t.entry.op for t in tasks.values() if t.solution is not None and t.entry.category == "core") == list(
        KERNELS
    )


@pytest.mark.parametrize("kind", ["core", "full"])
def test_the_q06_kernel_verifies_against_its_torchplan(tasks, tpch, tmp_path, kind):
    verdict = verdict_of(tasks[f"{kind}/q06"], tpch, tmp_path)
    assert verdict.passed, [c for c in verdict.checks if not c.passed] or verdict.failure


# Every core, and the full task of two queries beside Q6's: a full task is its core behind the same
# extraction, so the other six full tasks would mostly time the Parquet reads again (CI time).
@pytest.mark.slow
@pytest.mark.parametrize(
    "query, kind", [(q, "core") for q in KERNELS if q != "q06"] + [("q01", "full"), ("q14", "full")]
)
def test_every_kernel_verifies_against_its_torchplan(tasks, tpch, tmp_path, query, kind):
    verdict = verdict_of(tasks[f"{kind}/{query}"], tpch, tmp_path)
    assert verdict.passed, [c for c in verdict.checks if not c.passed] or verdict.failure


def test_a_query_without_a_kernel_is_a_failed_row_that_falls_back(tasks):
    [(group, status, data)] = datakernel.score(tasks["core/q02"], OPTIONS)
    assert status == "failed" and data["failure"]["kind"] == "no_kernel"
    assert data["datakernel"]["query"] == "q02"


def row(entry: str, status: str, speedup: float | None) -> Row:
    return Row("datakernel:datakernel", entry, "default", "score", "v", status, {"speedup_vs_compile": speedup}, 0.0)


def test_scoring_falls_back_to_the_torchplan_when_a_kernel_fails_or_is_slower():
    rows = [
        row("core/q01", "passed", 4.0),
        row("core/q02", "failed", None),
        row("core/q03", "passed", 0.5),
        row("full/q01", "passed", None),
    ]
    table = datakernel.summary(rows)
    assert table["core"]["speedups"] == {"core/q01": 4.0, "core/q02": 1.0, "core/q03": 1.0}
    assert table["core"]["pass_rate"] == pytest.approx(2 / 3)
    assert table["core"]["geomean"] == pytest.approx(4.0 ** (1 / 3))
    assert table["full"]["geomean"] is None  # nothing timed: pass rate only
    assert "2/3 verified (pass rate 67%; 2 of the 3 with a kernel)" in datakernel.render_summary(table)


def test_an_unknown_kind_is_a_usage_error():
    from diagnose.errors import UsageError

    with pytest.raises(UsageError, match="unknown task kind --kind both"):
        datakernel.kinds_of(dataclasses.replace(OPTIONS, kind="both"))


def test_bad_command_lines_are_one_line(cli, tmp_path):
    for args, message in (
        (("--sf", "0.02"), "unknown scale factor --sf 0.02"),
        (("--kind", "both"), "unknown task kind --kind both"),
    ):
        result = cli(
            "bench",
            "datakernel",
            *args,
            "--store",
            str(tmp_path / "s.sqlite"),
            env={"DIAGNOSE_DATAKERNEL_DIR": str(tmp_path)},
        )
        assert result.returncode != 0
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_wrong_kernel_fails_and_counts_as_the_torchplan(tpch_root, monkeypatch):
    from tests.bench.suites.conftest import SUITES

    monkeypatch.setenv("DIAGNOSE_DATAKERNEL_DIR", str(tpch_root))
    options = dataclasses.replace(
        OPTIONS, solutions=SUITES / "datakernel" / "wrong_kernels", pattern="core/q06", baselines=("eager",)
    )
    [task] = datakernel.load(datakernel.default_root(), options)
    [(group, status, data)] = datakernel.score(task, options)
    assert status == "failed" and data["correct"] is False
    stored = Row("datakernel:datakernel", task.entry.id, group, "score", "v", status, data, 0.0)
    assert datakernel.summary([stored])["core"]["speedups"] == {"core/q06": 1.0}


def test_optimize_mode_hands_the_agent_one_task_file(tasks, tmp_path):
    from diagnose.task import load_task

    seen = []
    rows = datakernel.optimize_task(
        tasks["core/q12"], OPTIONS, tmp_path, lambda path: seen.append(path) or [("default", "passed", {})]
    )
    [path] = seen
    text = path.read_text()
    assert "def q12_kernel" in text and text.index("ModelNew =") < text.index("Model = _problem.Model")
    task = load_task(path)
    assert task.kernels == ("q12_kernel",) and not task.two_files
    assert rows[0][2]["datakernel"] == {"query": "q12", "kind": "core", "data": "sf0.01"}


@pytest.mark.slow
def test_the_command_line_sweeps_and_summarises(tpch_root, tmp_path):
    cli = run_cli_here  # three commands in this process: torch imported once, not three times
    result = cli(
        "bench",
        "datakernel",
        "--filter",
        "q02,q06",
        "--kind",
        "core",
        "--seeds",
        "2",
        "--store",
        str(tmp_path / "s.sqlite"),
        env={"DIAGNOSE_DATAKERNEL_DIR": str(tpch_root)},
    )
    assert result.returncode == 1, result.stderr  # q02 has no kernel: a failed row
    assert "core  1/2 verified (pass rate 50%; 1 of the 1 with a kernel), not timed (CPU)" in result.stdout
    stream = cli(
        "bench",
        "datakernel",
        "--mode",
        "stream",
        "--filter",
        "q06",
        "--partition-rows",
        "16384",
        env={"DIAGNOSE_DATAKERNEL_DIR": str(tpch_root)},
    )
    assert stream.returncode == 0, stream.stderr
    assert "q06             4      16384" in stream.stdout and "match" in stream.stdout
    validate = cli(
        "bench",
        "datakernel",
        "--mode",
        "validate",
        "--filter",
        "q06,q13",
        env={"DIAGNOSE_DATAKERNEL_DIR": str(tpch_root)},
    )
    assert validate.returncode == 0, validate.stderr
    assert [line.split()[0] for line in validate.stdout.splitlines()[1:]] == ["q06", "q13"]


def test_a_missing_kernel_folder_is_a_usage_error(tpch_root, monkeypatch, tmp_path):
    from diagnose.errors import UsageError

    monkeypatch.setenv("DIAGNOSE_DATAKERNEL_DIR", str(tpch_root))
    with pytest.raises(UsageError, match="not a folder of kernel files"):
        datakernel.load(datakernel.default_root(), dataclasses.replace(OPTIONS, solutions=tmp_path / "nope"))


def test_each_seed_samples_the_largest_tables_rows_and_keeps_the_rest_whole(tpch):
    import torch

    from diagnose.bench.suites import datakernel_task

    query = str(datakernel.default_root() / "q14.py")
    value = datakernel_task.captured(query, str(tpch))
    assert sorted(value["rows"]) == ["l_discount", "l_extendedprice", "l_partkey", "l_shipdate"]
    draws = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        draws.append(dict(zip(value["names"], datakernel_task.subsample(value))))
    whole = dict(zip(value["names"], value["tensors"]))
    for draw in draws:
        assert 0.85 * len(whole["l_partkey"]) < len(draw["l_partkey"]) < 0.95 * len(whole["l_partkey"])
        assert len({len(draw[n]) for n in value["rows"]}) == 1
        assert torch.equal(draw["p_partkey"], whole["p_partkey"]) and torch.equal(
            draw["p_type_like"], whole["p_type_like"]
        )
    assert not torch.equal(draws[0]["l_partkey"][:1000], draws[1]["l_partkey"][:1000])
