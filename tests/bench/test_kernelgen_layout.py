"""KernelGenBench as its repository ships it (flagos-ai/KernelGenBench): operators listed from
`src/kernelgenbench/dataset/kernel_list.py` (parsed, never imported), accuracy tests found by
`@label`, MM_SHAPE operators scored with KernelGenBench's generated `def mm(a, b)` code and its own
tolerance beside diagnose's. The fixture checkout (`tests/fixtures/suites/kernelgen_checkout/`) is
written in that layout."""

from __future__ import annotations

import pytest

from diagnose.bench.suites import kernelgen, kernelgen_repo
from diagnose.bench.sweep import SweepOptions
from diagnose.errors import UsageError
from tests.conftest import FIXTURES

CHECKOUT = FIXTURES / "suites" / "kernelgen_checkout"
SOLUTIONS = CHECKOUT / "solutions"


def options(**kw) -> SweepOptions:
    return SweepOptions(suite_format="kernelgen", device="cpu", seeds=2, timeout_s=120, **kw)


def by_id(**kw) -> dict:
    return {t.entry.id: t for t in kernelgen.load(CHECKOUT, options(**kw))}


def test_operators_come_from_the_tables_of_kernel_list():
    tasks = by_id()
    assert sorted(tasks) == [
        "aten/add",
        "aten/mm",
        "cublas/cublasSgemm_v2",
        "mm_shape/mm_128x768_768x768_f32",
        "mm_shape/mm_16x32_32x8_f32",
        "mm_shape/mm_bad",
        "vllm13/moe_sum",
        "vllm13/rms_norm",
    ]
    assert tasks["aten/add"].problem == (
        "aten::add: unsupported: its accuracy test runs only in KernelGenBench's "
        "own harness (sandbox, operator registration), not reproduced here"
    )
    assert tasks["vllm13/rms_norm"].problem.endswith("unsupported: its accuracy test is not in this checkout")
    assert tasks["mm_shape/mm_16x32_32x8_f32"].problem is None
    assert "is not ((M, K), (K, N), dtype)" in tasks["mm_shape/mm_bad"].problem


def test_solutions_are_matched_by_label_and_missing_ones_are_named():
    tasks = by_id(solutions=SOLUTIONS)
    assert tasks["mm_shape/mm_16x32_32x8_f32"].solution.name == "mm_16x32_32x8_f32.py"
    assert tasks["mm_shape/mm_128x768_768x768_f32"].problem.startswith(
        "mm_shape/mm_128x768_768x768_f32: no mm_128x768_768x768_f32.py or mm.py in"
    )


def test_unsupported_and_unsolved_tasks_are_one_line_rows():
    tasks = by_id()
    [row] = kernelgen.score(tasks["aten/add"], options())
    assert row[1] == "failed" and row[2]["failure"]["kind"] == "unsupported"
    [row] = kernelgen.score(tasks["mm_shape/mm_16x32_32x8_f32"], options())
    assert row[2]["failure"]["kind"] == "unsupported" and "--solutions" in row[2]["failure"]["message"]


def test_portability_mode_is_refused_on_a_checkout():
    with pytest.raises(UsageError, match="scored"):
        kernelgen.load(CHECKOUT, options(mode="portability", targets=("cuda:sm90",)))


def test_the_generated_task_scales_big_shapes_down_on_the_cpu(tmp_path):
    source = kernelgen_repo.TASK.format(
        label="mm_x", solution="s.py", dtype="float16", m=128, k=768, n=768, sm=64, sk=64, sn=64, small="64x64x64"
    )
    assert '"test_scaled_64x64x64": lambda: _inputs(64, 64, 64)' in source and "_inputs(128, 768, 768)" in source
    assert "torch.float16" in source


@pytest.mark.slow
def test_an_mm_shape_operator_is_scored_with_both_verdicts():
    tasks = by_id(solutions=SOLUTIONS)
    rows = kernelgen.score(tasks["mm_shape/mm_16x32_32x8_f32"], options(solutions=SOLUTIONS))
    [(group, status, data)] = rows
    assert (group, status) == ("test_scaled_16x32x8", "passed"), data
    assert data["kernelgenbench"] == {"passed": True, "atol": pytest.approx(32e-4), "rtol": 1e-5}
    assert data["scaled"] is None, "16x32x8 is small enough as it is"
