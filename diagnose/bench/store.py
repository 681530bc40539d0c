"""The results store of benchmark sweeps: SQLite in WAL mode, one row per entry x input group x mode x version.

`version` joins the entry's source hash and the toolchain fingerprint (diagnose, torch and triton
versions, device), so a changed kernel or a new toolchain is measured again while a finished entry is
never redone unless asked. All rows of one entry are written in one transaction: an entry is either
done or not, and a sweep killed mid-way resumes at the first entry that is not.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    suite TEXT NOT NULL,
    entry TEXT NOT NULL,
    grp TEXT NOT NULL,
    mode TEXT NOT NULL,
    version TEXT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (suite, entry, grp, mode, version)
)
"""


@dataclass(frozen=True)
class Row:
    suite: str
    entry: str
    group: str
    mode: str
    version: str
    status: str
    data: dict
    created: float


def connect(path: str | Path) -> sqlite3.Connection:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=30)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(SCHEMA)
    return connection


def is_done(connection: sqlite3.Connection, suite: str, entry: str, mode: str, version: str) -> bool:
    found = connection.execute(
        "SELECT 1 FROM results WHERE suite=? AND entry=? AND mode=? AND version=? LIMIT 1",
        (suite, entry, mode, version),
    ).fetchone()
    return found is not None


def write_entry(
    connection: sqlite3.Connection, suite: str, entry: str, mode: str, version: str, groups: list[tuple[str, str, dict]]
) -> None:
    """Replace every row of (suite, entry, mode, version) with `groups`: (group, status, data)."""
    now = time.time()
    with connection:
        connection.execute(
            "DELETE FROM results WHERE suite=? AND entry=? AND mode=? AND version=?", (suite, entry, mode, version)
        )
        connection.executemany(
            "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(suite, entry, group, mode, version, status, json.dumps(data), now) for group, status, data in groups],
        )


def rows(connection: sqlite3.Connection, suite: str | None = None, mode: str | None = None) -> list[Row]:
    """Every row of the newest version of each (suite, entry, mode): an entry's new version replaces all
    rows of its old ones, including groups it no longer has (an entry that failed as a whole wrote one "*"
    row; once it passes, that row is history, not a failure)."""
    query = "SELECT suite, entry, grp, mode, version, status, data, created FROM results"
    clauses, params = [], []
    if suite:
        clauses.append("suite=?")
        params.append(suite)
    if mode:
        clauses.append("mode=?")
        params.append(mode)
    if clauses:
        query += " WHERE " + " AND ".join(clauses)
    newest: dict[tuple, str] = {}
    records = [
        Row(*record[:6], json.loads(record[6]), record[7])
        for record in connection.execute(query + " ORDER BY created", params)
    ]
    for row in records:
        newest[(row.suite, row.entry, row.mode)] = row.version
    kept = [row for row in records if newest[(row.suite, row.entry, row.mode)] == row.version]
    return sorted(kept, key=lambda r: (r.suite, r.entry, r.mode, r.group))


def wall_times(connection: sqlite3.Connection, suite: str, mode: str) -> dict[str, float]:
    """Entry -> seconds its newest run took (its harness's `total` phase, the same on each of its groups'
    rows), for the entries whose rows record it: the cost hint of a Ray sweep's longest-first order."""
    out = {}
    for row in rows(connection, suite, mode):
        total = dict((step, seconds) for step, seconds in row.data.get("phases") or ()).get("total")
        if total is not None:
            out[row.entry] = max(total, out.get(row.entry, 0.0))
    return out
