"""NpuKernel: one kernel launch from the torch_npu profiler's `kernel_details.csv`, as Evidence.

## What it reads
`torch_npu.profiler` with `on_trace_ready=tensorboard_trace_handler(dir)` writes
`<dir>/*/ASCEND_PROFILER_OUTPUT/kernel_details.csv`, one row per kernel launch (torch_npu
`_csv_headers.py`)::

    Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num,Mix Block Num,Input Shapes,Input Data Types,Output Shapes,Output Data Types,aiv_time(us),aiv_vec_ratio,aiv_scalar_ratio,aiv_mte2_ratio,aiv_mte3_ratio
    triton_softmax_kernel,triton_softmax_kernel,AI_VECTOR_CORE,1733130000.5,412.3,2.1,4096,0,"16384,4096",FLOAT,"16384,4096",FLOAT,...

plus the columns of the one `aic_metrics` set chosen for the run (PipeUtilization above). Triton
kernels' `Type` starts with `triton` (triton-ascend `testing.py::collect_files`).

## Evidence (stage `profile`, source `torch_npu`, kind `metric`)
`NpuKernel` per row: `name`, `core` (`AI_VECTOR_CORE`, `AI_CORE`, `MIX_AIC`, ...), `duration_us`,
`wait_us`, `block_dim`, `mix_block_dim`, and the pipe ratios (0..1) present among `aiv_vec_ratio`,
`aiv_scalar_ratio`, `aiv_mte2_ratio`, `aiv_mte3_ratio`, `aic_cube_ratio`, `aic_mte2_ratio`, with
`aiv_mte2_time_us` when given.
"""

from __future__ import annotations

from diagnose.profiling.tables import column, ratio, read_table, value
from diagnose.records import Evidence, Location

RATIOS = (
    "aiv_vec_ratio",
    "aiv_scalar_ratio",
    "aiv_mte2_ratio",
    "aiv_mte3_ratio",
    "aic_cube_ratio",
    "aic_mte2_ratio",
    "aic_scalar_ratio",
)


def parse_kernel_details(text: str, location: Location | None = None, triton_only: bool = False) -> list[Evidence]:
    out = []
    for row in read_table(text):
        name = column(row, "Name") or ""
        kind = column(row, "Type") or ""
        if triton_only and not kind.lower().startswith("triton"):
            continue
        args = {
            "name": name,
            "type": kind,
            "core": column(row, "Accelerator Core"),
            "duration_us": value(row, "Duration(us)"),
            "wait_us": value(row, "Wait Time(us)"),
            "block_dim": value(row, "Block Num", "Block Dim"),
            "mix_block_dim": value(row, "Mix Block Num", "Mix Block Dim"),
            "aiv_time_us": value(row, "aiv_time(us)"),
            "aiv_mte2_time_us": value(row, "aiv_mte2_time(us)"),
            "input_shapes": column(row, "Input Shapes"),
            "input_dtypes": column(row, "Input Data Types"),
            **{r: ratio(row, r) for r in RATIOS},
        }
        out.append(
            Evidence(
                "profile",
                "torch_npu",
                "NpuKernel",
                "metric",
                location,
                tuple((k, v) for k, v in args.items() if v is not None and v != ""),
            )
        )
    return out
