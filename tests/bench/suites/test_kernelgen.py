"""KernelGenBench adapter: operator specs scored over shapes x dtypes, and compiled per target (portability)."""

import pytest

from diagnose.bench.suites import kernelgen
from diagnose.bench.sweep import SweepOptions
from diagnose.errors import UsageError
from tests.bench.suites.conftest import SUITES, failure, run_sweep

SUITE = SUITES / "kernelgen" / "suite"
TARGETS = ("cuda:sm90", "hip:gfx942", "ascend:950")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    return run_sweep("kernelgen", SUITE, tmp_path_factory.mktemp("kg") / "r.sqlite")


@pytest.mark.slow
def test_every_small_shape_and_dtype_is_a_case(swept):
    summary, rows = swept
    assert (summary.ran, summary.failed) == (5, 2)
    groups = {entry: sorted(r.group for r in rs if r.status == "passed") for entry, rs in rows.items()}
    # 8192x1024 is device-sized: the CPU interpreter runs only the `test_` cases.
    assert groups["silu"] == ["test_100_float16", "test_100_float32", "test_8x129_float16", "test_8x129_float32"]
    assert groups["add"] == ["test_33_float32", "test_4x65_float32"]
    assert groups["matmul"] == ["test_16x32_32x16_float16"]


def test_broken_specs_give_one_line_errors(swept):
    rows = swept[1]
    assert failure(rows["nosemantics"]) == "nosemantics.json: the spec has no torch"
    assert failure(rows["nokernel"]) == "nokernel.json: no kernel file missing_abs.py beside it"


def test_spec_checks(tmp_path):
    path = tmp_path / "op.json"
    path.write_text('{"op": "x", "torch": "x +", "inputs": ["x"], "shapes": [[4]], "dtypes": ["float32"]}')
    with pytest.raises(ValueError, match="not a Python expression"):
        kernelgen.read_spec(path)
    path.write_text('{"op": "x", "torch": "a @ b", "inputs": ["a", "b"], "shapes": [[[2, 3]]], "dtypes": ["int8"]}')
    with pytest.raises(ValueError, match="dtypes"):
        kernelgen.read_spec(path)


@pytest.fixture(scope="module")
def portable(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return run_sweep(
            "kernelgen",
            SUITE,
            tmp_path_factory.mktemp("kgp") / "r.sqlite",
            mode="portability",
            targets=TARGETS,
            pattern="matmul",
        )


@pytest.mark.slow
def test_portability_compiles_for_each_target_and_reports_ir_facts(portable):
    summary, rows = portable
    assert summary.failed == 0, "a target whose toolchain is missing is not a failure"
    by_target = {r.group: r for r in rows["matmul"]}
    assert set(by_target) == set(TARGETS)
    [cuda] = by_target["cuda:sm90"].data["kernels"]["float16"]
    [hip] = by_target["hip:gfx942"].data["kernels"]["float16"]
    assert cuda["mma"] == ["wgmma"] and hip["mma"] == ["mfma"]
    assert any(w.startswith("load ") and w.endswith("-bit") for w in cuda["vector_widths"])
    table = kernelgen.portability_table(list(by_target.values()), list(TARGETS))
    assert "dot -> wgmma" in table and "dot -> mfma" in table


def test_a_missing_ascend_toolchain_reads_not_available(portable):
    # The sweep ran with an empty cache folder, so no Ascend toolchain is configured for it.
    ascend = {r.group: r for r in portable[1]["matmul"]}["ascend:950"]
    assert ascend.status == "unavailable"
    assert ascend.data["failure"]["message"].startswith("not available: ")
    assert kernelgen.cell(ascend) == "not available"


def test_portability_needs_targets():
    with pytest.raises(UsageError, match="--targets"):
        kernelgen.load(SUITE, SweepOptions(mode="portability"))


def test_the_report_counts_a_missing_toolchain_apart_from_failures(portable):
    from diagnose.bench import report

    rows = [r for entry in portable[1].values() for r in entry]
    data = report.summary(rows)
    assert data["unavailable"] >= 1 and data["failed"] == 0
    assert "not available here" in report.render(rows, "md").splitlines()[2]
