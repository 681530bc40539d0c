"""NcuCounters: the hardware counters of one kernel launch that a diagnosis needs, as `Evidence`.

## What it reads
One `NcuResult` of the raw page (sections SpeedOfLight, MemoryWorkloadAnalysis, Occupancy,
LaunchStats, WarpStateStats, SourceCounters), by metric name with fallbacks across ncu versions:

| field | metrics |
|---|---|
| duration | `gpu__time_duration.sum` |
| DRAM | `gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed` (or `dram__throughput...`); bytes from `dram__bytes_read.sum` + `dram__bytes_write.sum`, else `dram__bytes.sum`, else `dram__bytes.sum.per_second` times the duration (what the six sections give on ncu 2025.3) |
| L2, SM, memory SOL | `lts__throughput.avg.pct_of_peak_sustained_elapsed`, `sm__throughput...`, `gpu__compute_memory_throughput...` |
| occupancy | `sm__warps_active.avg.pct_of_peak_sustained_active` (achieved), `sm__maximum_warps_per_active_cycle_pct` (theoretical), the limiter: the smallest of `launch__occupancy_limit_{blocks,registers,shared_mem,warps,barriers}` |
| launch | `launch__registers_per_thread`, `launch__block_size`, `launch__grid_size`, `launch__waves_per_multiprocessor` |
| stalls | `smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio` (WarpStateStats), else `smsp__pcsamp_warps_issue_stalled_<reason>` samples (SourceCounters); `selected` is issuing, not stalling, and is left out |
| coalescing | `derived__memory_l2_theoretical_sectors_global_excessive` over `memory_l2_theoretical_sectors_global` |

## Evidence (stage `profile`, source `ncu`, kind `metric`)
`NcuDuration`, `DramThroughput`, `L2Throughput`, `SpeedOfLight`, `AchievedOccupancy` (with
`limiter`), `WarpStalls` (the top three reasons and their shares), `UncoalescedGlobalAccess` (kind
`missed` when more than 10% of the L2 sectors are excessive).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnose.profiling.nvidia.csv_pages import NcuResult
from diagnose.records import Evidence, Location, Record

STALL_RATIO = re.compile(r"^smsp__average_warps?_(?:latency_)?issue_stalled_(?P<reason>\w+?)_per_issue_active\.ratio$")
STALL_SAMPLES = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(?P<reason>\w+)$")
LIMITS = ("blocks", "registers", "shared_mem", "warps", "barriers")
NOT_STALLS = ("selected",)
EXCESSIVE_SHARE_MISSED = 0.10


@dataclass(frozen=True)
class NcuCounters(Record):
    """The counters of one launch, in base units (seconds, bytes, percent 0-100)."""

    kernel: str
    duration_s: float | None = None
    dram_pct: float | None = None
    dram_bytes: float | None = None
    l2_pct: float | None = None
    sm_pct: float | None = None
    memory_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None
    registers_per_thread: float | None = None
    block_size: float | None = None
    grid_size: float | None = None
    waves_per_sm: float | None = None
    stalls: tuple[tuple[str, float], ...] = ()
    excessive_sectors: float | None = None
    l2_sectors: float | None = None

    @property
    def dram_bytes_per_s(self) -> float | None:
        if self.dram_bytes is None or not self.duration_s:
            return None
        return self.dram_bytes / self.duration_s

    @property
    def excessive_share(self) -> float | None:
        if self.excessive_sectors is None or not self.l2_sectors:
            return None
        return self.excessive_sectors / self.l2_sectors


def counters(result: NcuResult) -> NcuCounters:
    v = result.value
    read, write = v("dram__bytes_read.sum"), v("dram__bytes_write.sum")
    duration = v("gpu__time_duration.sum")
    dram_bytes = (read or 0.0) + (write or 0.0) if (read is not None or write is not None) else v("dram__bytes.sum")
    rate = v("dram__bytes.sum.per_second")
    if dram_bytes is None and rate is not None and duration:
        dram_bytes = rate * duration
    limits = {name: v(f"launch__occupancy_limit_{name}") for name in LIMITS}
    limits = {k: x for k, x in limits.items() if x is not None}
    return NcuCounters(
        kernel=result.kernel,
        duration_s=duration,
        dram_pct=v(
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        ),
        dram_bytes=dram_bytes,
        l2_pct=v("lts__throughput.avg.pct_of_peak_sustained_elapsed"),
        sm_pct=v("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        memory_pct=v("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
        achieved_occupancy_pct=v("sm__warps_active.avg.pct_of_peak_sustained_active"),
        theoretical_occupancy_pct=v("sm__maximum_warps_per_active_cycle_pct"),
        occupancy_limiter=min(limits, key=limits.get) if limits else None,
        registers_per_thread=v("launch__registers_per_thread"),
        block_size=v("launch__block_size"),
        grid_size=v("launch__grid_size"),
        waves_per_sm=v("launch__waves_per_multiprocessor"),
        stalls=stall_shares(result),
        excessive_sectors=v("derived__memory_l2_theoretical_sectors_global_excessive"),
        l2_sectors=v("memory_l2_theoretical_sectors_global"),
    )


def stall_shares(result: NcuResult) -> tuple[tuple[str, float], ...]:
    """Stall reasons with their share of all stalls, largest first (ratios if present, else samples)."""
    for pattern in (STALL_RATIO, STALL_SAMPLES):
        found: dict[str, float] = {}
        for m, value in result.matching(pattern):
            reason = m["reason"]
            if reason.endswith("_not_issued") or reason in NOT_STALLS or "pred_on" in reason:
                continue
            found[reason] = found.get(reason, 0.0) + value
        total = sum(found.values())
        if total > 0:
            return tuple(sorted(((r, x / total) for r, x in found.items()), key=lambda rv: -rv[1]))
    return ()


def evidence(c: NcuCounters, location: Location | None, raw: str | None = None) -> list[Evidence]:
    """The counters as Evidence records (stage `profile`, source `ncu`)."""

    def ev(name: str, args: dict, kind: str = "metric") -> Evidence:
        return Evidence(
            "profile", "ncu", name, kind, location, tuple((k, _round(x)) for k, x in args.items() if x is not None), raw
        )

    out = []
    if c.duration_s is not None:
        out.append(ev("NcuDuration", {"kernel": c.kernel, "duration_us": c.duration_s * 1e6}))
    if c.dram_pct is not None or c.dram_bytes is not None:
        rate = c.dram_bytes_per_s
        out.append(
            ev(
                "DramThroughput",
                {"pct_of_peak": c.dram_pct, "bytes": c.dram_bytes, "tb_per_s": rate / 1e12 if rate else None},
            )
        )
    if c.l2_pct is not None:
        out.append(ev("L2Throughput", {"pct_of_peak": c.l2_pct}))
    if c.sm_pct is not None or c.memory_pct is not None:
        out.append(ev("SpeedOfLight", {"sm_pct": c.sm_pct, "memory_pct": c.memory_pct}))
    if c.achieved_occupancy_pct is not None:
        out.append(
            ev(
                "AchievedOccupancy",
                {
                    "achieved_pct": c.achieved_occupancy_pct,
                    "theoretical_pct": c.theoretical_occupancy_pct,
                    "limiter": c.occupancy_limiter,
                    "registers_per_thread": c.registers_per_thread,
                    "block_size": c.block_size,
                    "waves_per_sm": c.waves_per_sm,
                },
            )
        )
    if c.stalls:
        top = {f"{reason}": share for reason, share in c.stalls[:3]}
        out.append(ev("WarpStalls", {"top": c.stalls[0][0], **{f"share_{k}": x for k, x in top.items()}}))
    share = c.excessive_share
    if share is not None:
        kind = "missed" if share > EXCESSIVE_SHARE_MISSED else "passed"
        out.append(
            ev(
                "UncoalescedGlobalAccess",
                {"excessive_sectors": c.excessive_sectors, "l2_sectors": c.l2_sectors, "excessive_share": share},
                kind,
            )
        )
    return out


def _round(x):
    if isinstance(x, float):
        return float(f"{x:.4g}")
    return x
