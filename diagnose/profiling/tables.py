"""Reading profiler CSV tables: rows as dicts, numbers with thousands separators, columns by name.

Shared by the Ascend parsers (`ascend/`); Nsight Compute's pages have their own reader
(`nvidia/csv_pages.py`), which uses `number` from here. A column is found by its name with or without
a unit suffix (`Duration(us)` matches `Duration`, `aiv_gm_to_ub_bw(GB/s)` matches `aiv_gm_to_ub_bw`),
case-insensitively, since profiler versions differ in exactly that.
"""

from __future__ import annotations

import csv
import io
import re

NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?$")
UNIT_SUFFIX = re.compile(r"\s*\([^)]*\)\s*$")


def number(text: str | None) -> float | None:
    """A float from a profiler cell (`"1,271,840"`, `"83.27"`, `"85.3%"`, `"2e+06"`); None otherwise."""
    if text is None:
        return None
    text = str(text).strip().rstrip("%").strip()
    if not text or text.lower() in ("n/a", "nan", "-", "na", "none"):
        return None
    if not NUMBER.match(text) or not re.search(r"\d", text):
        return None
    return float(text.replace(",", ""))


def bare(name: str) -> str:
    """`Duration(us)` -> `duration`: the column name without its unit, lower-cased."""
    return UNIT_SUFFIX.sub("", name.strip()).strip().lower()


def read_table(text: str) -> list[dict[str, str]]:
    """Rows of a CSV with a header line (a UTF-8 BOM and blank lines are tolerated)."""
    text = text.lstrip("\ufeff")
    return [row for row in csv.DictReader(io.StringIO(text)) if any((v or "").strip() for v in row.values())]


def column(row: dict[str, str], *names: str) -> str | None:
    """The cell of the first of `names` present in `row`, matched without unit suffix or case."""
    index = {bare(k): v for k, v in row.items() if k is not None}
    for name in names:
        value = index.get(bare(name))
        if value is not None:
            return value
    return None


def value(row: dict[str, str], *names: str) -> float | None:
    return number(column(row, *names))


def ratio(row: dict[str, str], *names: str) -> float | None:
    """A utilisation ratio as 0..1, whether the profiler wrote 0.85 or 85 (percent)."""
    x = value(row, *names)
    if x is None:
        return None
    return x / 100.0 if x > 1.0 else x
