"""Ascend NPU profilers: torch_npu's `kernel_details.csv` / `op_statistic.csv` and `msprof op` tables
parsed into `Evidence`, and the diagnoses triton-ascend's profiling guide gives (`diagnoses.py`)."""

from diagnose.profiling.ascend.diagnoses import diagnose_npu
from diagnose.profiling.ascend.kernel_details import parse_kernel_details
from diagnose.profiling.ascend.msprof_op import parse_msprof_op
from diagnose.profiling.ascend.op_statistic import parse_op_statistic

__all__ = ["diagnose_npu", "parse_kernel_details", "parse_msprof_op", "parse_op_statistic"]
