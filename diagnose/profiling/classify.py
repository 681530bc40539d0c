"""Bottleneck classification: which limit holds a kernel back, as `Finding`s with their evidence.

One primary finding per input group, the first rule that holds:

1. **launch-bound** (PRF005): the measured time is within `LAUNCH_FACTOR` times the launch overhead of
   the forward's launches, or the static model's per-program and launch overhead is at least
   `OVERHEAD_PRIMARY` of the estimated time (millions of tiny programs).
2. **tail-bound** (PRF004): fewer programs than SMs (`LaunchShape`, or ncu's waves per SM below 1)
   while the roofline is not reached: part of the device idles whatever the kernel does.
3. **at the roof**: `fraction >= NEAR_ROOF` of the roofline -> memory-bound (PRF001) or compute-bound
   (PRF002) by the roofline's regime.
4. **counters** (ncu): achieved occupancy under `OCCUPANCY_SHORTFALL` of the theoretical one while
   the estimate's per-program overhead is at least `OVERHEAD_SECONDARY` -> launch/scheduling-bound
   (PRF005: blocks too short to keep the SMs full); DRAM or L2 throughput at `BUSY_PCT` or more of peak -> memory-bound; SM
   throughput that high -> compute-bound; achieved occupancy under `LOW_OCCUPANCY_PCT`, or no unit
   busy -> latency-bound (PRF003), with the top warp-stall reasons.
5. **estimate** (no counters): the static model's dominant term (`static/estimate.py`); a latency
   efficiency under `LATENCY_EFFICIENCY` means too few bytes in flight -> latency-bound.
6. otherwise the roofline's regime, with low confidence.

Secondary findings, when their evidence is there: a compute-bound task whose dot is not on the
target's best matrix engine (PRF002, from `DotLowering`), scheduling overhead at `OVERHEAD_SECONDARY` of the
estimate (PRF005), DRAM traffic over `EXCESS_TRAFFIC` times the minimal bytes (PRF104), uncoalesced
accesses (PRF101: ncu's excess L2 sectors, or the IR's strided/gathered accesses), occupancy limited
by registers or shared memory (PRF102), the hottest source lines (PRF103).

Confidence: `high` when hardware counters back the primary finding, `medium` for a measured
roofline alone, `low` for the static estimate (no device).
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.profiling.codes import CODES
from diagnose.profiling.nvidia.counters import NcuCounters
from diagnose.profiling.roofline import COMPUTE_BOUND, RooflinePosition, Work
from diagnose.profiling.static.estimate import Estimate
from diagnose.profiling.static.features import KernelFeatures
from diagnose.records import Evidence, Finding, Location

NEAR_ROOF = 0.7
LAUNCH_FACTOR = 3.0
OVERHEAD_PRIMARY = 0.5
OVERHEAD_SECONDARY = 0.25
BUSY_PCT = 60.0
IDLE_PCT = 40.0
LOW_OCCUPANCY_PCT = 30.0
OCCUPANCY_SHORTFALL = 0.6
LATENCY_EFFICIENCY = 0.6
EXCESS_TRAFFIC = 1.3
UNCOALESCED_SHARE = 0.1


@dataclass(frozen=True)
class GroupView:
    """Everything known about one input group of a task, gathered for the classifier."""

    group: str
    location: Location
    sm_count: int
    work: Work | None = None
    position: RooflinePosition | None = None
    launch_overhead_s: float | None = None
    features: tuple[KernelFeatures, ...] = ()
    estimates: tuple[Estimate, ...] = ()
    counters: tuple[NcuCounters, ...] = ()
    counter_evidence: tuple[Evidence, ...] = ()
    line_evidence: tuple[Evidence, ...] = ()
    ir_evidence: tuple[Evidence, ...] = ()

    @property
    def estimate_s(self) -> float | None:
        return sum(e.time_s for e in self.estimates) if self.estimates else None

    @property
    def programs(self) -> int | None:
        return max((f.programs for f in self.features), default=None)


def _ev(name: str, source: str, location: Location | None, kind: str = "metric", **args) -> Evidence:
    def plain(x):
        return float(f"{x:.4g}") if isinstance(x, float) else x

    return Evidence(
        "profile", source, name, kind, location, tuple((k, plain(v)) for k, v in args.items() if v is not None)
    )


def roofline_evidence(view: GroupView) -> list[Evidence]:
    p = view.position
    if p is None:
        return []
    return [
        _ev(
            "RooflinePosition",
            "roofline",
            view.location,
            group=p.group,
            variant=p.variant,
            time_us=p.time_s * 1e6,
            bound_us=p.bound_s * 1e6,
            fraction=p.fraction,
            regime=p.regime,
            intensity=p.intensity,
            achieved_tb_per_s=p.achieved_bytes_per_s / 1e12,
            achieved_tflop_per_s=p.achieved_flops_per_s / 1e12,
        )
    ]


def estimate_evidence(view: GroupView) -> list[Evidence]:
    out = []
    for f, e in zip(view.features, view.estimates):
        out.append(
            _ev(
                "StaticEstimate",
                "estimate",
                view.location,
                kernel=e.kernel,
                label=e.label,
                time_us=e.time_s * 1e6,
                memory_us=e.memory_s * 1e6,
                compute_us=e.compute_s * 1e6,
                overhead_us=e.overhead_s * 1e6,
                bottleneck=e.bottleneck,
                programs=f.programs,
                moved_over_unique=f.moved_bytes / f.unique_bytes if f.unique_bytes else None,
                width_efficiency=e.width_efficiency,
                latency_efficiency=e.latency_efficiency,
                inflight_bytes=f.inflight_bytes_per_program,
                dot_engine=f.dot_engine,
            )
        )
    return out


def _finding(code: str, message: str, confidence: str, location: Location, evidence: list[Evidence]) -> Finding:
    spec = CODES[code]
    return Finding(code, f"{spec.title}: {message}", spec.severity, confidence, location, tuple(evidence))


def _primary(view: GroupView, base: list[Evidence]) -> Finding:
    p, loc = view.position, view.location
    counters = view.counters[0] if view.counters else None
    ncu = list(view.counter_evidence)
    est = estimate_evidence(view)
    overhead_share = (sum(e.overhead_s for e in view.estimates) / view.estimate_s) if view.estimate_s else 0.0
    launches = max(1, len(view.features))
    where = f"{p.fraction:.0%} of the roofline" if p else "estimated"
    # 1. launch-bound
    if p and view.launch_overhead_s and p.time_s <= LAUNCH_FACTOR * launches * view.launch_overhead_s:
        return _finding(
            "PRF005",
            f"{p.time_s * 1e6:.1f} us for {launches} launch(es) of about "
            f"{view.launch_overhead_s * 1e6:.1f} us overhead each",
            "high",
            loc,
            base
            + [
                _ev(
                    "LaunchOverhead",
                    "ceilings",
                    loc,
                    launch_overhead_us=view.launch_overhead_s * 1e6,
                    launches=launches,
                )
            ],
        )
    if overhead_share >= OVERHEAD_PRIMARY:
        return _finding(
            "PRF005",
            f"{where}; per-program and launch overhead is {overhead_share:.0%} of the "
            f"estimate ({view.programs} programs)",
            "medium" if p else "low",
            loc,
            base + est,
        )
    # 2. tail-bound
    waves = counters.waves_per_sm if counters else None
    too_few = (view.programs is not None and view.programs < view.sm_count) or (waves is not None and waves < 1)
    if too_few and (not p or p.fraction < NEAR_ROOF):
        shape = [e for e in view.ir_evidence if e.name == "LaunchShape"]
        return _finding(
            "PRF004",
            f"{where}; {view.programs} programs for {view.sm_count} SMs",
            "high" if counters else "medium",
            loc,
            base + shape + ncu[:2] + est,
        )
    # 3. at the roof
    if p and p.fraction >= NEAR_ROOF:
        code = "PRF002" if p.regime == COMPUTE_BOUND else "PRF001"
        return _finding(code, f"at {where} ({p.regime} task)", "high" if counters else "medium", loc, base + ncu)
    # 4. counters
    if counters:
        dram, l2, sm = counters.dram_pct or 0.0, counters.l2_pct or 0.0, counters.sm_pct or 0.0
        stalls = ", ".join(f"{r} {s:.0%}" for r, s in counters.stalls[:2])
        achieved, theoretical = counters.achieved_occupancy_pct, counters.theoretical_occupancy_pct
        if (
            achieved is not None
            and theoretical
            and achieved < OCCUPANCY_SHORTFALL * theoretical
            and overhead_share >= OVERHEAD_SECONDARY
        ):
            # Blocks too short-lived to keep the SMs full: the scheduler, not the memory, is the limit.
            return _finding(
                "PRF005",
                f"{where}; achieved occupancy {achieved:.0f}% of a theoretical {theoretical:.0f}% "
                f"with {view.programs} short programs",
                "high",
                loc,
                base + ncu + est,
            )
        if max(dram, l2) >= BUSY_PCT and max(dram, l2) >= sm:
            unit = "DRAM" if dram >= l2 else "L2"
            return _finding("PRF001", f"{where}; {unit} at {max(dram, l2):.0f}% of its peak", "high", loc, base + ncu)
        if sm >= BUSY_PCT:
            return _finding(
                "PRF002",
                f"{where}; SM throughput at {sm:.0f}% of peak",
                "high",
                loc,
                base + ncu + [e for e in view.ir_evidence if e.name == "DotLowering"],
            )
        occupancy = counters.achieved_occupancy_pct
        if (occupancy is not None and occupancy < LOW_OCCUPANCY_PCT) or max(dram, l2, sm) < IDLE_PCT:
            detail = f"achieved occupancy {occupancy:.0f}%" if occupancy is not None else "no unit busy"
            return _finding(
                "PRF003", f"{where}; {detail}" + (f"; stalls: {stalls}" if stalls else ""), "high", loc, base + ncu
            )
    # 5. estimate
    if view.estimates:
        dominant = max(view.estimates, key=lambda e: e.time_s)
        if dominant.latency_efficiency < LATENCY_EFFICIENCY and dominant.memory_s >= dominant.compute_s:
            return _finding(
                "PRF003",
                f"{where if p else 'by the static estimate'}: {dominant.latency_efficiency:.0%} of the "
                "bytes needed in flight to cover memory latency",
                "medium" if p else "low",
                loc,
                base + est,
            )
        code = {"compute-bound": "PRF002", "launch-bound": "PRF005", "latency-bound": "PRF003"}.get(
            dominant.bottleneck, "PRF001"
        )
        detail = (
            "re-read tiles and passes over memory"
            if code == "PRF001"
            and (
                view.features and max(f.moved_bytes / max(f.unique_bytes, 1.0) for f in view.features) > EXCESS_TRAFFIC
            )
            else dominant.bottleneck
        )
        said = f"{where}; the static estimate says {detail}" if p else f"by the static estimate: {detail}"
        return _finding(
            code,
            said,
            "medium" if p else "low",
            loc,
            base + est + [e for e in view.ir_evidence if e.name == "DotLowering" and e.kind == "missed"],
        )
    # 6. the regime alone
    regime = p.regime if p else "memory-bound"
    return _finding(
        "PRF002" if regime == COMPUTE_BOUND else "PRF001",
        f"{where}; no counters or estimate single out a cause",
        "low",
        loc,
        base or [_ev("NoEvidence", "roofline", loc)],
    )


def classify(view: GroupView) -> list[Finding]:
    """The primary finding of one group, then the secondary ones."""
    base = roofline_evidence(view)
    findings = [_primary(view, base)]
    loc = view.location
    counters = view.counters[0] if view.counters else None
    if view.estimate_s and findings[0].code != "PRF005":
        share = sum(e.overhead_s for e in view.estimates) / view.estimate_s
        if share >= OVERHEAD_SECONDARY:
            findings.append(
                _finding(
                    "PRF005",
                    f"per-program scheduling and launch overhead is {share:.0%} of the "
                    f"estimate ({view.programs} programs)",
                    "low",
                    loc,
                    estimate_evidence(view),
                )
            )
    dots = [e for e in view.ir_evidence if e.name == "DotLowering" and e.kind == "missed"]
    if dots and findings[0].code != "PRF002" and view.position and view.position.regime == COMPUTE_BOUND:
        d = dots[0]
        findings.append(
            _finding(
                "PRF002",
                f"the dot runs on {d.arg('engine')}, not {d.arg('best')} ({d.arg('reason')})",
                "high",
                d.location or loc,
                dots,
            )
        )
    if counters and counters.dram_bytes and view.work and counters.dram_bytes >= EXCESS_TRAFFIC * view.work.bytes:
        ratio = counters.dram_bytes / view.work.bytes
        findings.append(
            _finding(
                "PRF104",
                f"{ratio:.2f}x the minimal {view.work.bytes / 1e9:.3g} GB cross DRAM",
                "high",
                loc,
                [e for e in view.counter_evidence if e.name == "DramThroughput"],
            )
        )
    uncoalesced = [e for e in view.counter_evidence if e.name == "UncoalescedGlobalAccess" and e.kind == "missed"]
    lines = [e for e in view.line_evidence if e.name == "UncoalescedLine"]
    strided = [
        e for e in view.ir_evidence if e.name == "GlobalAccessWidth" and e.arg("reason") in ("non_contiguous", "gather")
    ]
    if uncoalesced or lines or strided:
        source = "ncu" if (uncoalesced or lines) else "IR"
        where_lines = sorted({e.location.line for e in lines + strided if e.location})
        findings.append(
            _finding(
                "PRF101",
                f"{source} shows excess sectors"
                + (f" on lines {', '.join(map(str, where_lines))}" if where_lines else ""),
                "high" if source == "ncu" else "medium",
                (lines + strided)[0].location if (lines + strided) else loc,
                uncoalesced + lines + strided,
            )
        )
    if (
        counters
        and counters.occupancy_limiter in ("registers", "shared_mem")
        and counters.theoretical_occupancy_pct is not None
        and counters.theoretical_occupancy_pct < 50
    ):
        findings.append(
            _finding(
                "PRF102",
                f"theoretical occupancy {counters.theoretical_occupancy_pct:.0f}% "
                f"(limited by {counters.occupancy_limiter})",
                "high",
                loc,
                [e for e in view.counter_evidence if e.name == "AchievedOccupancy"],
            )
        )
    hot = [e for e in view.line_evidence if e.name == "StallHotspot"]
    if hot:
        top = hot[0]
        findings.append(
            _finding(
                "PRF103",
                f"line {top.location.line} holds {top.arg('share'):.0%} of the warp-stall samples",
                "high",
                top.location,
                hot,
            )
        )
    return findings


def static_finding(view: GroupView, target: str) -> Finding:
    """The PRF301 record that says the numbers are an estimate, for a machine with no device."""
    total = view.estimate_s or 0.0
    return _finding(
        "PRF301",
        f"{total * 1e6:.1f} us estimated on {target} (an estimate, not a measurement)",
        "low",
        view.location,
        estimate_evidence(view) or [_ev("NoEstimate", "estimate", view.location)],
    )
