"""Helpers for the suite-adapter tests: the fixture suites and a sweep that returns its rows by entry."""

from __future__ import annotations

from pathlib import Path

from diagnose.bench import store
from diagnose.bench.sweep import SweepOptions, sweep
from tests.conftest import FIXTURES

SUITES = FIXTURES / "suites"


def run_sweep(fmt: str, suite: Path, db: Path, **options) -> tuple[object, dict[str, list[store.Row]]]:
    """Sweep `suite` in format `fmt` on the CPU interpreter (2 seeds, 2 entries at a time)."""
    options = {"seeds": 2, "jobs": 2, **options}
    summary = sweep(suite, db, SweepOptions(suite_format=fmt, **options))
    by_entry: dict[str, list[store.Row]] = {}
    for row in store.rows(store.connect(db), mode=options.get("mode", "score")):
        by_entry.setdefault(row.entry, []).append(row)
    return summary, by_entry


def failure(rows: list[store.Row]) -> str:
    """The one-line failure message of an entry that could not be scored."""
    [row] = rows
    assert row.group == "*" and row.status == "failed"
    return row.data["failure"]["message"]
