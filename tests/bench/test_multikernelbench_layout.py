"""MultiKernelBench as it ships: a checkout's `reference/` tasks, classic and NPUKernelBench (`.json`
input groups with short dtype names), its LLM responses as solutions, empty-tensor cases
(fixture: tests/fixtures/suites/multikernelbench_checkout)."""

import json

import pytest

from diagnose.bench.suites import cpu_shapes, multikernelbench
from diagnose.bench.sweep import SweepOptions
from tests.bench.suites.conftest import SUITES, run_sweep

CHECKOUT = SUITES / "multikernelbench_checkout"
NPU = CHECKOUT / "reference" / "npukernelbench_level0"
CASES = NPU / "1_scale_rows.json"


def test_the_checkout_root_lists_reference_tasks_of_both_kinds():
    tasks = {t.entry.id: t for t in multikernelbench.load(CHECKOUT, SweepOptions())}
    assert sorted(tasks) == ["activation/relu", "npukernelbench_level0/1_scale_rows"]
    assert all(t.problem is None and t.solution is None for t in tasks.values())
    assert tasks["npukernelbench_level0/1_scale_rows"].files == (NPU / "1_scale_rows.py", CASES)
    assert tasks["npukernelbench_level0/1_scale_rows"].entry.level == 0


def test_llm_responses_are_solutions():
    tasks = {t.entry.id: t for t in multikernelbench.load(CHECKOUT, SweepOptions(solutions=CHECKOUT / "output"))}
    response = tasks["npukernelbench_level0/1_scale_rows"].solution
    assert response.name == "1_scale_rows.txt"
    code = multikernelbench.code_of(response).read_text()
    assert code.startswith("import torch") and "class ModelNew" in code and "```" not in code


def test_cpu_cases_include_the_empty_one_and_new_dtypes():
    cases = multikernelbench.read_shipped(CASES)
    assert [c["inputs"][0]["dtype"] for c in cases] == ["fp32", "fp32", "fp16", "bf16"]
    assert multikernelbench.cpu_cases(cases) == [0, 1, 2]


def test_scaling_a_case_keeps_its_shapes_consistent():
    big = multikernelbench.read_shipped(CASES)[0]
    small = cpu_shapes.scale_case(big, 64)
    assert [s.get("shape") for s in small["inputs"]] == [[64, 128], [128], None]
    assert small["inputs"][2]["value"] == 128, "an attribute equal to a dimension follows it"
    assert cpu_shapes.scale_case(multikernelbench.read_shipped(CASES)[1], 64)["inputs"][0]["shape"] == [0, 1]


def test_the_reference_builds_each_case_itself():
    import torch

    module = cpu_shapes.import_file(NPU / "1_scale_rows.py")
    case = cpu_shapes.scale_case(multikernelbench.read_shipped(CASES)[3], 64)
    x, scale, width = multikernelbench.shipped_inputs(module, case)
    assert x.dtype == scale.dtype == torch.bfloat16 and tuple(x.shape) == (32, 64) and width == 64
    assert "open" not in vars(module), "the case's line is served only while the group is built"
    assert cpu_shapes.runs(module, [x, scale, width])


def test_bad_shipped_json_is_one_line(tmp_path):
    (tmp_path / "op.py").write_text((NPU / "1_scale_rows.py").read_text())
    (tmp_path / "op.json").write_text(json.dumps({"inputs": []}) + "\n{not json\n")
    [task] = multikernelbench.load(tmp_path, SweepOptions())
    assert task.problem.startswith("op.json:2: malformed JSON line")


@pytest.mark.slow
def test_checkout_scores_on_the_cpu_with_an_empty_case(tmp_path):
    summary, rows = run_sweep(
        "multikernelbench",
        CHECKOUT,
        tmp_path / "r.sqlite",
        solutions=CHECKOUT / "output",
        pattern="scale_rows",
        tolerance="multikernelbench",
    )
    groups = {r.group: r for r in rows["npukernelbench_level0/1_scale_rows"]}
    assert sorted(groups) == ["test_case0", "test_case1", "test_case2"]
    assert summary.failed == 0, {g: (r.data.get("failed_checks"), r.data.get("reasons")) for g, r in groups.items()}
    assert "scaled for the CPU" in groups["test_case0"].data["cpu_shapes"]
    assert groups["test_case1"].data["cpu_shapes"].endswith("[[0, 64], [64]]")
    assert groups["test_case2"].data["multikernelbench"]["correct"]
