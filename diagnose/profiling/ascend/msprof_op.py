"""MsprofOp: the per-block tables of `msprof op` (msOpProf), averaged over blocks, as Evidence.

## What it reads
`msprof op --kernel-name=K --output=DIR python3 t.py` writes `DIR/OPPROF_<timestamp>_XXX/` with one CSV
per metric set, one row per `block_id` / `sub_block_id` (Ascend/msopprof
`docs/en/user_guide/msopprof_performance_data.md`):

- `PipeUtilization.csv`: `aiv_time(us)`, `aiv_total_cycles`, `aiv_vec_time(us)`, `aiv_vec_ratio`,
  `aiv_scalar_time(us)`, `aiv_scalar_ratio`, `aiv_mte2_time(us)`, `aiv_mte2_ratio`, `aiv_mte3_time(us)`,
  `aiv_mte3_ratio` (cube side: `aic_cube_ratio`, `aic_mte1_ratio`, `aic_mte2_ratio`, `aic_fixpipe_ratio`);
- `Memory.csv`: `aiv_mte2_active_bw`, `aiv_gm_to_ub_bw`, `aiv_ub_to_gm_bw` (GB/s);
- `ResourceConflictRatio.csv`: `aiv_vec_bank_cflt_ratio`, `aiv_vec_bankgroup_cflt_ratio`,
  `aiv_vec_mte_cflt_ratio`, `aiv_vec_total_cflt_ratio`;
- `OpBasicInfo.csv`: `Op Name`, `Block Dim`, `Task Duration(us)` (these three assumed, see the fixtures'
  README).

`parse_msprof_op(folder)` reads whichever are present (several operators: `OpName/<seq>/*.csv`, the
first found). Ratios are 0..1 (percentages are converted).

## Evidence (stage `profile`, source `msprof`, kind `metric`)
`PipeUtilization` (`blocks`, the mean of every ratio and time column, `longest_pipe`: the pipe with the
largest mean ratio, which is the bottleneck), `NpuMemoryBandwidth` (mean GB/s per column),
`BankConflicts` (mean ratios), `NpuOpBasicInfo` (`op_name`, `block_dim`, `duration_us`).
"""

from __future__ import annotations

from pathlib import Path

from diagnose.profiling.tables import bare, column, number, read_table, value
from diagnose.records import Evidence, Location

PIPES = ("vec", "scalar", "mte2", "mte3", "cube", "mte1", "fixpipe")
KEYS = ("block_id", "sub_block_id")


def _means(rows: list[dict[str, str]]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for row in rows:
        for name, cell in row.items():
            if name is None or bare(name) in KEYS:
                continue
            x = number(cell)
            if x is not None:
                sums.setdefault(bare(name), []).append(x)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def _ratio(x: float) -> float:
    return x / 100.0 if x > 1.0 else x


def pipe_utilization(text: str, location: Location | None = None) -> Evidence:
    rows = read_table(text)
    means = _means(rows)
    args: dict = {"blocks": len(rows)}
    ratios = {}
    for key, x in means.items():
        if key.endswith("_ratio"):
            ratios[key] = _ratio(x)
            args[key] = round(ratios[key], 4)
        elif key.endswith("_time"):
            args[f"{key}_us"] = round(x, 3)
        elif key.endswith("_cycles"):
            args[key] = round(x)
    pipes = {k: x for k, x in ratios.items() if any(k.endswith(f"_{p}_ratio") for p in PIPES)}
    if pipes:
        args["longest_pipe"] = max(pipes, key=pipes.get).removesuffix("_ratio")
    return Evidence("profile", "msprof", "PipeUtilization", "metric", location, tuple(args.items()))


def memory_bandwidth(text: str, location: Location | None = None) -> Evidence:
    means = _means(read_table(text))
    return Evidence(
        "profile",
        "msprof",
        "NpuMemoryBandwidth",
        "metric",
        location,
        tuple((f"{k}_gb_per_s", round(x, 3)) for k, x in means.items() if k.endswith("_bw")),
    )


def bank_conflicts(text: str, location: Location | None = None) -> Evidence:
    means = _means(read_table(text))
    return Evidence(
        "profile",
        "msprof",
        "BankConflicts",
        "metric",
        location,
        tuple((k, round(_ratio(x), 4)) for k, x in means.items() if "cflt" in k),
    )


def basic_info(text: str, location: Location | None = None) -> Evidence | None:
    rows = read_table(text)
    if not rows:
        return None
    row = rows[0]
    args = {
        "op_name": column(row, "Op Name"),
        "block_dim": value(row, "Block Dim"),
        "mix_block_dim": value(row, "Mix Block Dim"),
        "duration_us": value(row, "Task Duration(us)"),
    }
    return Evidence(
        "profile",
        "msprof",
        "NpuOpBasicInfo",
        "metric",
        location,
        tuple((k, v) for k, v in args.items() if v is not None),
    )


def parse_msprof_op(folder: str | Path, location: Location | None = None) -> list[Evidence]:
    """Every table found under an `OPPROF_*` folder (or the folder holding the CSVs)."""
    folder = Path(folder)
    readers = (
        ("OpBasicInfo", basic_info),
        ("PipeUtilization", pipe_utilization),
        ("Memory", memory_bandwidth),
        ("ResourceConflictRatio", bank_conflicts),
    )
    out = []
    for stem, read in readers:
        found = sorted(folder.glob(f"{stem}.csv")) or sorted(folder.glob(f"**/{stem}*.csv"))
        if found:
            ev = read(found[0].read_text(), location)
            if ev is not None and ev.args:
                out.append(ev)
    return out
