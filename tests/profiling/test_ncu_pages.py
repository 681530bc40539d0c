"""Parsing Nsight Compute's CSV pages, on the pages of the H200 run (ncu 2025.3, `--clock-control
none`, sections SpeedOfLight, MemoryWorkloadAnalysis, Occupancy, LaunchStats, WarpStateStats,
SourceCounters) committed in tests/fixtures/profiling/ncu/, and the join of the SASS source page to
the IR layer's SASS line map."""

from __future__ import annotations

import json

import pytest

from diagnose.profiling.nvidia import counters as ncu_counters
from diagnose.profiling.nvidia import source_page
from diagnose.profiling.nvidia.csv_pages import number, parse_raw_page, to_base
from diagnose.records import Location
from tests.profiling.conftest import NCU

EXAMPLES = {
    "vector_add": "add_kernel",
    "softmax": "softmax_kernel",
    "layernorm": "layernorm_kernel",
    "matmul": "matmul_kernel",
}


def raw(example: str):
    (result,) = parse_raw_page((NCU / f"h200_{example}_raw.csv").read_text())
    return result


def sass_map(example: str):
    data = json.loads((NCU / f"h200_{example}_sass_map.json").read_text())
    return [(off, ins, Location(data["source"], line) if line else None) for off, ins, line in data["sass"]]


@pytest.mark.parametrize(
    "text, value",
    [
        ("201,440", 201440.0),
        ("3,231,167,593,328.04", 3231167593328.04),
        ("67.16", 67.16),
        ("2e+06", 2e6),
        ("-", None),
        ("n/a", None),
        ("", None),
        ("(128, 1, 1)", None),
    ],
)
def test_numbers(text, value):
    assert number(text) == value


@pytest.mark.parametrize(
    "value, unit, base",
    [
        (201440, "ns", 201440e-9),
        (2.5, "Mbyte", 2.5e6),
        (210.5, "usecond", 210.5e-6),
        (3.2, "Gbyte/second", 3.2e9),
        (1.98, "Ghz", 1.98e9),
        (5, "sectors", 5),
        (67.0, "%", 67.0),
        (1.0, "byte/s", 1.0),
        (7.0, "msecond", 7e-3),
    ],
)
def test_units(value, unit, base):
    assert to_base(value, unit) == pytest.approx(base)


def test_constructed_page_with_scaled_units():
    (r,) = parse_raw_page((NCU / "constructed_scaled_units_raw.csv").read_text())
    c = ncu_counters.counters(r)
    assert c.duration_s == pytest.approx(210.5e-6) and c.dram_bytes == pytest.approx(402.65e6 + 268435456)


@pytest.mark.parametrize("example", EXAMPLES)
def test_raw_page_of_every_example(example):
    r = raw(example)
    assert r.kernel == EXAMPLES[example] and r.id == 0 and r.block == "(128, 1, 1)"
    assert len(r.metrics) > 600
    c = ncu_counters.counters(r)
    assert 1e-5 < c.duration_s < 2e-3
    assert 0 < c.dram_pct < 100 and 0 < c.l2_pct < 100 and 0 < c.sm_pct < 100
    assert 0 < c.achieved_occupancy_pct <= c.theoretical_occupancy_pct <= 100
    assert c.occupancy_limiter in ("blocks", "registers", "shared_mem", "warps", "barriers")
    assert c.block_size == 128 and c.registers_per_thread > 0
    assert c.stalls and abs(sum(share for _, share in c.stalls) - 1) < 1e-9 and "selected" not in dict(c.stalls)
    assert c.excessive_share == 0.0  # the four examples' accesses are coalesced


def test_softmax_counters_match_the_page():
    c = ncu_counters.counters(raw("softmax"))
    assert c.duration_s == pytest.approx(201.44e-6)
    assert c.dram_pct == pytest.approx(67.16) and c.l2_pct == pytest.approx(78.13) and c.sm_pct == pytest.approx(38.88)
    assert c.achieved_occupancy_pct == pytest.approx(90.45) and c.theoretical_occupancy_pct == 100
    assert c.dram_bytes == pytest.approx(3231167593328.04 * 201.44e-6)
    assert c.stalls[0][0] == "long_scoreboard"
    assert c.l2_sectors == 33554432 and c.excessive_sectors == 0


def test_what_the_counters_say_about_each_example():
    add, matmul, layernorm = (ncu_counters.counters(raw(e)) for e in ("vector_add", "matmul", "layernorm"))
    assert add.achieved_occupancy_pct < 0.6 * add.theoretical_occupancy_pct  # 128-element programs: SMs half full
    assert add.waves_per_sm > 200
    assert matmul.l2_pct > 80 > matmul.dram_pct  # 32x32 tiles re-read through L2
    assert matmul.occupancy_limiter == "registers" and matmul.theoretical_occupancy_pct == pytest.approx(62.5)
    assert layernorm.dram_bytes > 1.9 * (2 * 8192 * 8000 * 4)  # three passes: the re-reads miss L2


def test_evidence_records():
    c = ncu_counters.counters(raw("softmax"))
    loc = Location("examples/softmax.py", 25)
    ev = {e.name: e for e in ncu_counters.evidence(c, loc)}
    assert set(ev) == {
        "NcuDuration",
        "DramThroughput",
        "L2Throughput",
        "SpeedOfLight",
        "AchievedOccupancy",
        "WarpStalls",
        "UncoalescedGlobalAccess",
    }
    assert all(e.stage == "profile" and e.source == "ncu" and e.location == loc for e in ev.values())
    assert ev["WarpStalls"].arg("top") == "long_scoreboard"
    assert ev["UncoalescedGlobalAccess"].kind == "passed"
    assert ev["NcuDuration"].arg("duration_us") == pytest.approx(201.4)


@pytest.mark.parametrize("example", EXAMPLES)
def test_source_page_joins_the_sass_line_map_by_offset(example):
    rows = source_page.parse_source_page((NCU / f"h200_{example}_source_sass.csv").read_text())
    sass = sass_map(example)
    assert len(rows) == len(sass)  # the JIT's cubin and the offline compile have the same instructions
    joined = source_page.join(rows, sass)
    assert joined.method == "offset" and joined.agreement == 1.0
    attributed = sum(h.share for h in joined.hotspots)  # the rest sits on compiler-made code with no line
    assert 0.85 < attributed <= 1.0 + 1e-9
    assert all(h.location.path == f"examples/{example}.py" for h in joined.hotspots)


@pytest.mark.parametrize(
    "example, line, stall",
    [
        ("vector_add", 29, "long_sb"),
        ("softmax", 51, "long_sb"),
        ("layernorm", 58, "long_sb"),
        ("matmul", 37, "barrier"),
    ],
)
def test_hottest_line_of_each_example(example, line, stall):
    rows = source_page.parse_source_page((NCU / f"h200_{example}_source_sass.csv").read_text())
    top = source_page.join(rows, sass_map(example)).hotspots[0]
    assert (top.location.line, top.top_stall) == (line, stall)


def test_join_falls_back_to_position_then_gives_up():
    rows = source_page.parse_source_page((NCU / "h200_vector_add_source_sass.csv").read_text())
    sass = sass_map("vector_add")
    shifted = [(off + 0x1000, ins, loc) for off, ins, loc in sass]  # offsets no longer line up
    assert source_page.join(rows, shifted).method == "position"
    wrong = [(off, "NOP", loc) for off, _, loc in sass]
    result = source_page.join(rows, wrong)
    assert result.method == "none" and not result.hotspots and "does not match" in result.note
    assert source_page.join([], sass).note == "no source-page rows"


def test_opcode():
    assert source_page.opcode("@!P0 LDG.E.128 R4, desc[UR4][R2.64]") == "LDG"
    assert source_page.opcode("      LDC R1, c[0x0][0x28]") == "LDC"
