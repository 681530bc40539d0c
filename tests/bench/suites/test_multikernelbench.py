"""MultiKernelBench adapter: a reference with get_input_groups() plus a JSON-lines file of cases."""

import json

import pytest

from diagnose.bench.suites import multikernelbench
from tests.bench.suites.conftest import SUITES, failure, run_sweep

SUITE = SUITES / "multikernelbench" / "suite"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    before = sorted((p.name, p.stat().st_mtime_ns) for p in SUITE.rglob("*"))
    result = run_sweep("multikernelbench", SUITE, tmp_path_factory.mktemp("mkb") / "r.sqlite")
    assert sorted((p.name, p.stat().st_mtime_ns) for p in SUITE.rglob("*")) == before, "the suite is never written"
    return result


@pytest.mark.slow
def test_every_case_of_the_jsonl_is_an_input_group(swept):
    summary, rows = swept
    assert (summary.ran, summary.failed) == (5, 2)
    groups = {entry: sorted((r.group, r.status) for r in rs) for entry, rs in rows.items()}
    # The reference's own `large` group is device-sized: the CPU interpreter runs only the test cases.
    assert groups["rowsum"] == [("test_small", "passed"), ("test_wide", "passed")]
    assert groups["axpy"] == [("test_a2", "passed"), ("test_neg", "passed")]
    assert groups["gather"] == [("test_rows", "passed")]


def test_broken_tasks_give_one_line_errors(swept):
    rows = swept[1]
    assert failure(rows["badjson"]).startswith("badjson.jsonl:2: malformed JSON line")
    assert "has no `get_input_groups`" in failure(rows["nogroups"])


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"name": "a", "inputs": [{"shape": [2], "dtype": "float8"}]}', "unknown dtype"),
        ('{"name": "a", "inputs": [{"shape": [-1]}]}', "`shape` must be"),
        ('{"inputs": []}', "string `name`"),
        ("[1, 2]", "string `name`"),
    ],
)
def test_case_schema_is_checked(tmp_path, line, message):
    path = tmp_path / "op.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=message):
        multikernelbench.read_cases(path)


def test_inputs_follow_their_spec():
    import torch

    torch.manual_seed(0)
    index = multikernelbench.make_input({"shape": [1000], "dtype": "int64", "low": 3, "high": 7})
    assert index.dtype == torch.int64 and int(index.min()) >= 3 and int(index.max()) <= 6
    half = multikernelbench.make_input({"shape": [4, 5], "dtype": "float16"})
    assert half.shape == (4, 5) and half.dtype == torch.float16
    assert multikernelbench.make_input({"value": 0.5}) == 0.5


def test_missing_cases_file_is_reported(tmp_path):
    from diagnose.bench.sweep import SweepOptions

    (tmp_path / "op.py").write_text((SUITE / "axpy.py").read_text())
    (tmp_path / "op_triton.py").write_text((SUITE / "axpy_triton.py").read_text())
    [task] = multikernelbench.load(tmp_path, SweepOptions())
    assert task.problem == "op.py: no op.jsonl or op.json of input cases beside it"
    (tmp_path / "op.jsonl").write_text(json.dumps({"name": "test_x", "inputs": [{"value": 1}]}) + "\n")
    [task] = multikernelbench.load(tmp_path, SweepOptions())
    assert task.problem is None and task.solution == tmp_path / "op_triton.py"
