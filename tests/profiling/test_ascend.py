"""NPU profiler CSVs (torch_npu kernel_details / op_statistic, msprof op tables) into Evidence, and the
diagnoses of notes/ascend.md section 6, on fixtures constructed from the documented columns
(tests/fixtures/profiling/ascend/README.md)."""

from __future__ import annotations

import pytest

from diagnose.profiling.ascend import (
    diagnose_npu,
    parse_kernel_details,
    parse_msprof_op,
    parse_op_statistic,
)
from diagnose.profiling.tables import bare, column, number, ratio
from diagnose.records import Location
from diagnose.targets import lookup
from tests.profiling.conftest import ASCEND

LOC = Location("kernel.py", 12)
TARGET = lookup("ascend:910b")


def kernels():
    return {e.arg("name"): e for e in parse_kernel_details((ASCEND / "kernel_details.csv").read_text(), LOC)}


def test_kernel_details_rows():
    k = kernels()
    assert set(k) == {"triton_softmax_kernel", "aclnnInplaceZero_ZerosLike", "triton_gather_rows_kernel"}
    soft = k["triton_softmax_kernel"]
    assert soft.stage == "profile" and soft.source == "torch_npu" and soft.kind == "metric" and soft.location == LOC
    assert soft.arg("core") == "AI_VECTOR_CORE" and soft.arg("duration_us") == 412.3 and soft.arg("block_dim") == 48
    assert soft.arg("aiv_vec_ratio") == 0.712 and soft.arg("aiv_mte2_time_us") == 269.1
    triton = parse_kernel_details((ASCEND / "kernel_details.csv").read_text(), triton_only=True)
    assert [e.arg("name") for e in triton] == ["triton_softmax_kernel", "triton_gather_rows_kernel"]


def test_op_statistic_sorted_with_shares():
    rows = parse_op_statistic((ASCEND / "op_statistic.csv").read_text())
    assert [e.arg("op_type") for e in rows] == ["triton_gather_rows_kernel", "triton_softmax_kernel", "ZerosLike"]
    assert (
        rows[0].arg("avg_us") == 2841.7 and rows[0].arg("count") == 30 and rows[0].arg("share") == pytest.approx(0.8637)
    )


def test_op_statistic_needs_only_the_documented_columns():
    rows = parse_op_statistic("OP Type,Avg Time(us)\ntriton_a,10.0\ntriton_b,30.0\n")
    assert [(e.arg("op_type"), e.arg("share")) for e in rows] == [("triton_b", 0.75), ("triton_a", 0.25)]


def test_msprof_op_tables_average_over_blocks():
    ev = {e.name: e for e in parse_msprof_op(ASCEND / "opprof_softmax", LOC)}
    assert set(ev) == {"NpuOpBasicInfo", "PipeUtilization", "NpuMemoryBandwidth", "BankConflicts"}
    pipe = ev["PipeUtilization"]
    assert pipe.source == "msprof" and pipe.arg("blocks") == 48
    assert pipe.arg("aiv_vec_ratio") == pytest.approx(0.712, rel=0.02) and pipe.arg("longest_pipe") == "aiv_vec"
    assert pipe.arg("aiv_time_us") == pytest.approx(410.9, rel=0.02)
    assert ev["NpuMemoryBandwidth"].arg("aiv_mte2_active_bw_gb_per_s") == pytest.approx(1480, rel=0.05)
    assert ev["NpuOpBasicInfo"].arg("block_dim") == 48


def test_healthy_vector_kernel_has_no_findings():
    k = kernels()["triton_softmax_kernel"]
    assert (
        diagnose_npu(
            [k] + parse_msprof_op(ASCEND / "opprof_softmax", LOC), TARGET, LOC, bytes_moved=2 * 16384 * 4096 * 4
        )
        == []
    )


def test_the_three_documented_diagnoses_and_bank_conflicts():
    k = kernels()["triton_gather_rows_kernel"]
    evidence = [k] + parse_msprof_op(ASCEND / "opprof_scalar_gather", LOC)
    found = {f.code: f for f in diagnose_npu(evidence, TARGET, LOC, bytes_moved=(65536 * 1024 * 4) * 2 + 65536 * 8)}
    assert set(found) == {"PRF201", "PRF202", "PRF203", "PRF204"}
    assert "scalar pipe 62% busy, vector pipe 8%" in found["PRF201"].message
    assert "4096 blocks on 48 vector cores: 86 scheduling rounds" in found["PRF203"].message
    assert "MTE2 takes 1339.8 us" in found["PRF202"].message and found["PRF202"].confidence == "medium"
    assert "18% of vector cycles" in found["PRF204"].message
    for f in found.values():
        assert f.evidence and f.location == LOC
        assert any(e.name == "PipeUtilization" and e.arg("longest_pipe") == "aiv_scalar" for e in f.evidence)


def test_cube_kernels_count_ai_cores():
    from diagnose.profiling.ascend.diagnoses import cores_for

    assert cores_for("AI_VECTOR_CORE", TARGET) == 2 * TARGET.sm_count
    assert cores_for("AI_CORE", TARGET) == TARGET.sm_count == 24


@pytest.mark.parametrize("text, value", [("85.3%", 85.3), ("1,024", 1024.0), ("N/A", None), ("0.5", 0.5)])
def test_cells(text, value):
    assert number(text) == value


def test_columns_match_without_unit_or_case():
    row = {"Duration(us)": "5", "AIV_VEC_RATIO": "71.2"}
    assert bare("aiv_gm_to_ub_bw(GB/s)") == "aiv_gm_to_ub_bw"
    assert column(row, "duration") == "5" and ratio(row, "aiv_vec_ratio") == pytest.approx(0.712)
