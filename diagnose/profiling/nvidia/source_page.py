"""SourceHotspots: per-source-line warp-stall samples and excess sectors, from ncu's SASS source page.

## What it reads
`ncu --import REPORT --page source --csv --print-source sass`: one row per SASS instruction with
its address and the SourceCounters metrics::

    "Kernel Name","softmax_kernel",
    "Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",...,"L2 Theoretical Sectors Global Excessive",...,"stall_long_sb",...
    "0x7fb4477a0000","      LDC R1, c[0x0][0x28]","28","13",...

and the IR layer's SASS with line info (`CompileRecord.sass()`, `nvdisasm -g -c` of the same cubin the
JIT loads: `benchmarks/results/2026-12-02-h200-ir-vs-jit/` shows the offline compile matches the JIT)::

        //## File "/work/k.py", line 27 inlined at ...
        /*0a30*/                   LDG.E.128 R4, desc[UR4][R2.64] ;

Instructions are joined by their offset in the function (ncu's address minus the kernel's first
address against nvdisasm's `/*0a30*/`); the join is kept only when the opcodes agree on at least
`MIN_AGREEMENT` of the instructions, else it is tried by position, else given up (no hot spots,
the reason in `note`). Each instruction then lands on the user line the IR layer maps it to (inlined
`tl.*` helpers map to the line that called them), and samples and excess sectors add up per line.

## Evidence (stage `profile`, source `ncu`)
`StallHotspot` (kind `metric`) for the lines holding the most stall samples: `samples`, `share` of
the kernel's samples, `top_stall` (the per-reason `stall_*` columns summed over the line, e.g.
`long_sb`), `excessive_sectors`, `instructions`; `UncoalescedLine` (kind `missed`) for lines with
excess L2 sectors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnose.ir.sourcemap import parse_sass_lines
from diagnose.profiling.nvidia.csv_pages import find_header, number, rows
from diagnose.records import Evidence, Location, Record

MIN_AGREEMENT = 0.8
SAMPLES_COLUMNS = ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)", "Sampling Data (All)")
NOT_ISSUED_COLUMNS = ("Warp Stall Sampling (Not-issued Samples)", "Warp Stall Sampling (Not-issued Cycles)")
EXCESSIVE_COLUMNS = ("L2 Theoretical Sectors Global Excessive",)
EXECUTED_COLUMNS = ("Instructions Executed", "Warp Instructions Executed")
# /*0a30*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
SASS_INSTRUCTION = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")


@dataclass(frozen=True)
class SourceRow(Record):
    """One SASS instruction of the source page with its counters."""

    address: int
    sass: str
    samples: float = 0.0
    not_issued: float = 0.0
    excessive_sectors: float = 0.0
    executed: float = 0.0
    stalls: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class LineHotspot(Record):
    """What one user source line accounts for in the profiled kernel."""

    location: Location
    samples: float
    share: float
    excessive_sectors: float
    instructions: int
    top_stall: str | None = None


@dataclass(frozen=True)
class Join(Record):
    hotspots: tuple[LineHotspot, ...]
    method: str
    agreement: float
    note: str = ""


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    for name in names:
        if name in header:
            return header.index(name)
    return None


def _address(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") or re.search(r"[a-fA-F]", text) else int(text)
    except ValueError:
        return None


def parse_source_page(text: str) -> list[SourceRow]:
    """The SASS rows of one kernel's source page (the first kernel when several are printed)."""
    table = rows(text)
    head = find_header(table, "Address", "Source")
    if head is None:
        return []
    header = [c.strip() for c in table[head]]
    cols = {
        key: _column(header, names)
        for key, names in (
            ("samples", SAMPLES_COLUMNS),
            ("not_issued", NOT_ISSUED_COLUMNS),
            ("excessive", EXCESSIVE_COLUMNS),
            ("executed", EXECUTED_COLUMNS),
        )
    }
    a, s = header.index("Address"), header.index("Source")
    reasons = [
        (i, name[len("stall_") :])
        for i, name in enumerate(header)
        if name.startswith("stall_") and "(" not in name and name != "stall_selected"
    ]
    out: list[SourceRow] = []
    for row in table[head + 1 :]:
        if len(row) <= max(a, s):
            continue
        if row[a].strip() == "Address":  # the next kernel's header: one kernel per parse
            break
        address = _address(row[a])
        if address is None:
            continue

        def cell(key: str, row: list[str] = row) -> float:
            i = cols[key]
            return (number(row[i]) or 0.0) if i is not None and i < len(row) else 0.0

        stalls = tuple((r, number(row[i]) or 0.0) for i, r in reasons if i < len(row) and (number(row[i]) or 0.0) > 0)
        out.append(
            SourceRow(
                address,
                row[s].strip(),
                cell("samples"),
                cell("not_issued"),
                cell("excessive"),
                cell("executed"),
                stalls,
            )
        )
    return out


def sass_offsets(sass_text: str) -> list[tuple[int, str, Location | None]]:
    """(offset, instruction, user location) for every instruction of `nvdisasm -g` output."""
    out = []
    for line in parse_sass_lines(sass_text):
        m = SASS_INSTRUCTION.search(line.text)
        if m:
            out.append((int(m[1], 16), m[2].strip(), line.location))
    return out


def opcode(instruction: str) -> str:
    """`@!P0 LDG.E.128 R4, [R2]` -> `LDG`: the mnemonic without predicate and modifiers."""
    parts = instruction.strip().split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0].split(".")[0] if parts else ""


def join(source: list[SourceRow], sass: list[tuple[int, str, Location | None]], user_path: str | None = None) -> Join:
    """Per-line hot spots: ncu's instructions matched to the IR layer's SASS line map."""
    if not source or not sass:
        return Join((), "none", 0.0, "no source-page rows" if not source else "no SASS line map")
    base = min(r.address for r in source)
    by_offset = {off: (text, loc) for off, text, loc in sass}
    pairs = [(r, by_offset.get(r.address - base)) for r in source]
    method, agreement = "offset", _agreement(pairs)
    if agreement < MIN_AGREEMENT:
        pairs = [(r, (text, loc)) for r, (_, text, loc) in zip(source, sass)]
        method, agreement = "position", _agreement(pairs)
    if agreement < MIN_AGREEMENT:
        return Join(
            (), "none", agreement, f"ncu's SASS does not match the offline compile ({agreement:.0%} of opcodes agree)"
        )
    total = sum(r.samples for r in source) or 1.0
    lines: dict[tuple[str, int], list] = {}
    for row, hit in pairs:
        if hit is None or hit[1] is None:
            continue
        loc = hit[1]
        key = (user_path or loc.path, loc.line)
        entry = lines.setdefault(key, [0.0, 0.0, 0, {}])
        entry[0] += row.samples
        entry[1] += row.excessive_sectors
        entry[2] += 1
        for reason, count in row.stalls:
            entry[3][reason] = entry[3].get(reason, 0.0) + count
    spots = tuple(
        sorted(
            (
                LineHotspot(Location(path, line), s, s / total, x, n, max(r, key=r.get) if r else None)
                for (path, line), (s, x, n, r) in lines.items()
            ),
            key=lambda h: (-h.samples, h.location.line),
        )
    )
    return Join(spots, method, agreement)


def _agreement(pairs) -> float:
    matched = [(r, hit) for r, hit in pairs if hit is not None]
    if not pairs:
        return 0.0
    same = sum(1 for r, (text, _) in matched if opcode(r.sass) == opcode(text))
    return same / len(pairs)


def evidence(result: Join, top: int = 3, min_share: float = 0.05) -> list[Evidence]:
    out = []
    for spot in result.hotspots[:top]:
        if spot.share < min_share:
            break
        out.append(
            Evidence(
                "profile",
                "ncu",
                "StallHotspot",
                "metric",
                spot.location,
                tuple(
                    (k, v)
                    for k, v in (
                        ("samples", int(spot.samples)),
                        ("share", round(spot.share, 3)),
                        ("top_stall", spot.top_stall),
                        ("excessive_sectors", int(spot.excessive_sectors)),
                        ("instructions", spot.instructions),
                        ("join", result.method),
                    )
                    if v is not None
                ),
            )
        )
    for spot in result.hotspots:
        if spot.excessive_sectors > 0:
            out.append(
                Evidence(
                    "profile",
                    "ncu",
                    "UncoalescedLine",
                    "missed",
                    spot.location,
                    (("excessive_sectors", int(spot.excessive_sectors)), ("join", result.method)),
                )
            )
    return out
