"""NpuOpStatistic: per-operator totals from the torch_npu profiler's `op_statistic.csv`, as Evidence.

## What it reads
`<dir>/*/ASCEND_PROFILER_OUTPUT/op_statistic.csv`, one row per operator type; `OP Type` and
`Avg Time(us)` are the columns triton-ascend's `triton/testing.py` reads (Triton kernels' `OP Type`
starts with `triton`), `Core Type`, `Count`, `Total Time(us)`, `Min Time(us)`, `Max Time(us)`,
`Ratio(%)` are read when present::

    OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)
    triton_softmax_kernel,AI_VECTOR_CORE,30,12369.0,409.8,412.3,418.9,71.2

## Evidence (stage `profile`, source `torch_npu`, kind `metric`)
`NpuOpStatistic` per row: `op_type`, `core`, `count`, `avg_us`, `total_us`, `min_us`, `max_us`,
`share` (of all operators' time, 0..1), largest total first.
"""

from __future__ import annotations

from diagnose.profiling.tables import column, read_table, value
from diagnose.records import Evidence, Location


def parse_op_statistic(text: str, location: Location | None = None) -> list[Evidence]:
    rows = []
    for row in read_table(text):
        op = column(row, "OP Type")
        avg = value(row, "Avg Time(us)")
        if op is None or avg is None:
            continue
        count = value(row, "Count")
        total = value(row, "Total Time(us)") or (avg * count if count else avg)
        rows.append(
            {
                "op_type": op,
                "core": column(row, "Core Type"),
                "count": count,
                "avg_us": avg,
                "total_us": total,
                "min_us": value(row, "Min Time(us)"),
                "max_us": value(row, "Max Time(us)"),
                "ratio": value(row, "Ratio(%)"),
            }
        )
    grand = sum(r["total_us"] for r in rows) or 1.0
    out = []
    for r in sorted(rows, key=lambda r: -r["total_us"]):
        share = r.pop("ratio")
        r["share"] = share / 100.0 if share is not None else r["total_us"] / grand
        out.append(
            Evidence(
                "profile",
                "torch_npu",
                "NpuOpStatistic",
                "metric",
                location,
                tuple((k, v) for k, v in r.items() if v is not None),
            )
        )
    return out
