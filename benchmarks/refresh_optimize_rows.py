"""Rebuild a store's optimize-mode rows from the runs' report.json files (the source of truth).

    python benchmarks/refresh_optimize_rows.py STORE RUNS_DIR [RUNS_DIR ...]

A row of the store is what `diagnose.bench.optimize.rows_from_report` made of a run's report when the
run ended. When that function learns more (a better reason for an unimproved entry), the stored
rows can be made again from the same reports, without the device: each entry's rows, found by the
`run_id` they carry, are replaced under the same version. Prints one line per entry changed and
leaves entries whose run report is not found as they are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from diagnose.bench import store
from diagnose.bench.optimize import rows_from_report


def refresh(store_path: str, runs_dirs: list[str]) -> int:
    reports = {p.parent.name: p for d in runs_dirs for p in Path(d).glob("*/report.json")}
    connection = store.connect(store_path)
    changed = 0
    by_entry: dict[tuple, list[store.Row]] = {}
    for row in store.rows(connection, mode="optimize"):
        by_entry.setdefault((row.suite, row.entry, row.version), []).append(row)
    for (suite, entry, version), old in sorted(by_entry.items()):
        run_id = old[0].data.get("run_id")
        if run_id not in reports:
            continue
        new = rows_from_report(json.loads(reports[run_id].read_text()), run_id)
        if sorted((r.group, r.status, r.data) for r in old) != sorted(new):
            store.write_entry(connection, suite, entry, "optimize", version, new)
            changed += 1
            reasons = {reason for _, _, data in new for reason in data.get("reasons", [])}
            print(f"{entry}: {'; '.join(sorted(reasons))}")
    return changed


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    print(f"{refresh(sys.argv[1], sys.argv[2:])} entries rebuilt")
