"""Helpers for the triage tests: fixture paths and the inline-expectation parser."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RULE_FIXTURES = FIXTURES / "triage"
GOOD_KERNELS = FIXTURES / "good_kernels"
# `# error: [TRI001]`, `# error: [TRI001, TRI007]` or `# expect: TRI001`
EXPECT = re.compile(r"#\s*(?:error:\s*\[(?P<list>[^\]]+)\]|expect:\s*(?P<one>[A-Z]+\d+))")
TARGET = re.compile(r"^#\s*target:\s*(\S+)", re.M)


def expected_lines(source: str, code: str) -> set[int]:
    lines = set()
    for number, line in enumerate(source.splitlines(), 1):
        for m in EXPECT.finditer(line):
            codes = [c.strip() for c in (m.group("list") or m.group("one")).split(",")]
            if code in codes:
                lines.add(number)
    return lines
