"""Reading the CSV that `ncu --import REPORT --csv` prints: rows, numbers, units.

## What it reads
- The **raw page** (`--page raw --csv --print-units base`): a header row of metric names
  (`"ID","Process ID",...,"Kernel Name",...,"dram__bytes_read.sum",...`), a units row (`"","",...,
  "byte",...`) and one row per profiled launch::

      "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC",...,"gpu__time_duration.sum"
      "","","","","","","","","","","",...,"ns"
      "0","760","python3.12","127.0.0.1","softmax_kernel","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0",...,"201,440"

- Any page whose header is found by a cell name (`find_header`): the source page starts at the row
  holding `Address` and `Source`.

Lines before the header (`==PROF==` / `==WARNING==` chatter) are skipped. Numbers may carry thousands
separators (`"1,271,840"`); `n/a` and empty cells read as None. `to_base` turns a value in a scaled unit
(`Mbyte`, `usecond`, `Gbyte/second`, `Mhz`) into base units; with `--print-units base` ncu 2025.3
still writes times as `ns` and rates as `byte/s`, which this reads too (`201,440` `ns` -> 2.0144e-4 s).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from diagnose.profiling.tables import number
from diagnose.records import Record

PREFIX = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
BASE_UNITS = ("byte", "second", "s", "cycle", "hz", "inst", "sector", "request", "warp", "thread", "block")
IDENTITY_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)


def _scale(part: str) -> float:
    part = part.strip()
    if not part or part.lower() in BASE_UNITS:
        return 1.0
    if part[0] in PREFIX and part[1:].lower() in BASE_UNITS:
        return PREFIX[part[0]]
    return 1.0


def to_base(value: float | None, unit: str) -> float | None:
    """`value` in `unit` expressed in base units (`2.5`, `Mbyte` -> 2.5e6)."""
    if value is None:
        return None
    numerator, _, denominator = (unit or "").partition("/")
    return value * _scale(numerator) / (_scale(denominator) if denominator else 1.0)


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def find_header(table: list[list[str]], *names: str) -> int | None:
    """Index of the first row holding every one of `names` as a cell."""
    for i, row in enumerate(table):
        cells = {c.strip() for c in row}
        if all(n in cells for n in names):
            return i
    return None


@dataclass(frozen=True)
class NcuResult(Record):
    """One profiled launch from the raw page: identity columns and every metric in base units."""

    id: int
    kernel: str
    block: str
    grid: str
    metrics: tuple[tuple[str, float | None, str], ...]

    def value(self, *names: str) -> float | None:
        """The first of `names` that this result has a number for."""
        table = {name: v for name, v, _ in self.metrics}
        for name in names:
            if table.get(name) is not None:
                return table[name]
        return None

    def matching(self, pattern: re.Pattern) -> list[tuple[re.Match, float]]:
        return [(m, v) for name, v, _ in self.metrics if v is not None and (m := pattern.match(name))]


def parse_raw_page(text: str) -> list[NcuResult]:
    """Every launch of a raw-page CSV export."""
    table = rows(text)
    head = find_header(table, "ID", "Kernel Name")
    if head is None:
        return []
    header = [c.strip() for c in table[head]]
    body = table[head + 1 :]
    units = [""] * len(header)
    if body and body[0] and body[0][0].strip() == "":
        units = [c.strip() for c in body[0]] + [""] * (len(header) - len(body[0]))
        body = body[1:]
    out = []
    for row in body:
        if not row or not row[0].strip().isdigit():
            continue
        cells = dict(zip(header, row))
        metrics = tuple(
            (name, to_base(number(cell), units[i]), units[i])
            for i, (name, cell) in enumerate(zip(header, row))
            if name not in IDENTITY_COLUMNS
        )
        out.append(
            NcuResult(
                int(cells["ID"]),
                cells.get("Kernel Name", ""),
                cells.get("Block Size", ""),
                cells.get("Grid Size", ""),
                metrics,
            )
        )
    return out
