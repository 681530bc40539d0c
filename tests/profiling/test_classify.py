"""Classification decisions: the primary finding per group, the secondary ones, and their evidence."""

from __future__ import annotations

from diagnose.profiling.classify import GroupView, classify, static_finding
from diagnose.profiling.codes import CODES
from diagnose.profiling.nvidia.counters import NcuCounters, evidence
from diagnose.profiling.roofline import Roof, Work, position
from diagnose.profiling.static.estimate import Estimate
from diagnose.profiling.static.features import KernelFeatures
from diagnose.records import Evidence, Location

LOC = Location("/k.py", 10)
ROOF = Roof(4.28e12, 700e12, "fp16", True)
STREAM = Work("g", 1e9, 0.0, "fp32", flops_source="none")
MATMUL = Work("g", 1e8, 1.4e11, "fp16")


def feat(programs=16384, moved=2e9, unique=1e9) -> KernelFeatures:
    return KernelFeatures("k", programs, 4, 3, moved, unique, 1.0, 4096, 16)


def est(memory=2e-4, compute=0.0, overhead=1e-5, latency=1.0, bottleneck="memory-bound") -> Estimate:
    return Estimate("k", max(memory, compute) + overhead, memory, compute, overhead, 1.0, latency, bottleneck)


def view(work=STREAM, time_s=None, **kw) -> GroupView:
    p = position(work, ROOF, time_s) if time_s else None
    kw.setdefault("features", (feat(),))
    kw.setdefault("estimates", (est(),))
    return GroupView("g", LOC, 132, work=work, position=p, launch_overhead_s=5e-6, **kw)


def codes(found) -> list[str]:
    return [f.code for f in found]


def test_every_finding_has_a_known_code_and_evidence():
    for v in (view(time_s=0.3e-3), view(), view(time_s=2e-6)):
        for f in classify(v):
            assert f.code in CODES and f.evidence


def test_near_the_roof_is_memory_bound_with_the_roofline_as_evidence():
    (primary, *_) = classify(view(time_s=STREAM.bytes / 4.28e12 / 0.85))
    assert primary.code == "PRF001" and "85% of the roofline" in primary.message
    assert primary.evidence[0].name == "RooflinePosition" and primary.evidence[0].arg("fraction") == 0.85
    assert primary.confidence == "medium"  # a measured roofline without counters


def test_near_the_roof_of_a_matmul_is_compute_bound():
    (primary, *_) = classify(view(work=MATMUL, time_s=MATMUL.flops / 700e12 / 0.8))
    assert primary.code == "PRF002"


def test_launch_bound_when_time_is_a_few_launch_overheads():
    (primary, *_) = classify(view(work=Work("g", 1e4, 0, "fp32"), time_s=8e-6))
    assert primary.code == "PRF005" and any(e.name == "LaunchOverhead" for e in primary.evidence)


def test_scheduling_bound_from_the_estimate():
    v = view(time_s=1.3e-3, features=(feat(programs=2**21),), estimates=(est(memory=6e-4, overhead=7e-4),))
    (primary, *_) = classify(v)
    assert primary.code == "PRF005" and "programs" in primary.message


def test_tail_bound_with_fewer_programs_than_sms():
    v = view(
        time_s=1e-3,
        features=(feat(programs=64),),
        ir_evidence=(Evidence("ir", "launch", "LaunchShape", "missed", LOC, (("programs", 64), ("sm_count", 132))),),
    )
    (primary, *_) = classify(v)
    assert primary.code == "PRF004" and "64 programs for 132 SMs" in primary.message
    assert any(e.name == "LaunchShape" for e in primary.evidence)


def test_counters_decide_memory_bound_and_excess_traffic():
    c = NcuCounters(
        "k",
        duration_s=4e-4,
        dram_pct=78.0,
        dram_bytes=1.6e9,
        l2_pct=50.0,
        sm_pct=20.0,
        achieved_occupancy_pct=85.0,
        stalls=(("long_scoreboard", 0.7), ("wait", 0.1)),
    )
    found = classify(view(time_s=4e-4, counters=(c,), counter_evidence=tuple(evidence(c, LOC))))
    assert codes(found)[0] == "PRF001" and found[0].confidence == "high" and "DRAM at 78%" in found[0].message
    assert any(e.source == "ncu" and e.name == "DramThroughput" for e in found[0].evidence)
    excess = next(f for f in found if f.code == "PRF104")
    assert "1.60x" in excess.message


def test_counters_decide_latency_bound_on_low_occupancy():
    c = NcuCounters(
        "k",
        dram_pct=25.0,
        l2_pct=20.0,
        sm_pct=15.0,
        achieved_occupancy_pct=18.0,
        theoretical_occupancy_pct=25.0,
        occupancy_limiter="registers",
        stalls=(("long_scoreboard", 0.6), ("barrier", 0.2)),
    )
    found = classify(view(time_s=5e-3, counters=(c,), counter_evidence=tuple(evidence(c, LOC))))
    assert codes(found)[0] == "PRF003" and "occupancy 18%" in found[0].message and "long_scoreboard" in found[0].message
    assert "PRF102" in codes(found)


def test_counters_decide_compute_bound():
    c = NcuCounters("k", dram_pct=10.0, l2_pct=30.0, sm_pct=85.0, achieved_occupancy_pct=40.0)
    dot = Evidence("ir", "ttgir", "DotLowering", "missed", LOC, (("engine", "mma_v2"),))
    found = classify(
        view(work=MATMUL, time_s=1e-3, counters=(c,), counter_evidence=tuple(evidence(c, LOC)), ir_evidence=(dot,))
    )
    assert codes(found)[0] == "PRF002" and dot in found[0].evidence


def test_estimate_decides_without_counters():
    v = view(
        time_s=1e-3,
        work=MATMUL,
        features=(feat(moved=8.6e9, unique=1e8),),
        estimates=(est(memory=9e-4, compute=2.8e-4),),
    )
    (primary, *_) = classify(v)
    assert primary.code == "PRF001" and "re-read tiles" in primary.message and primary.confidence == "medium"
    low = view(time_s=1e-3, estimates=(est(latency=0.3),))
    assert classify(low)[0].code == "PRF003"


def test_no_device_is_low_confidence_and_labelled_an_estimate():
    v = view()
    found = classify(v)
    assert found[0].confidence == "low" and found[0].message.startswith(CODES[found[0].code].title)
    label = static_finding(v, "cuda:sm90")
    assert label.code == "PRF301" and "an estimate" in label.message
    assert all(e.arg("label") == "estimate" for e in label.evidence)


def test_uncoalesced_and_hotspot_findings_point_at_lines():
    line = Location("/k.py", 27)
    hot = Evidence("profile", "ncu", "StallHotspot", "metric", line, (("samples", 900), ("share", 0.45)))
    bad = Evidence("profile", "ncu", "UncoalescedLine", "missed", line, (("excessive_sectors", 4096),))
    found = classify(view(time_s=4e-4, line_evidence=(hot, bad)))
    assert next(f for f in found if f.code == "PRF101").location == line
    assert "line 27 holds 45%" in next(f for f in found if f.code == "PRF103").message
    strided = Evidence("ir", "ptx", "GlobalAccessWidth", "missed", line, (("reason", "non_contiguous"),))
    assert "PRF101" in codes(classify(view(ir_evidence=(strided,))))
