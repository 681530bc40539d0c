"""The table of a set of `diagnose optimize` reports: per task and input group, the initial and best
medians, the speedup, the fraction of the roofline bound before and after, the rewrites, the deepest
level and the run's wall time.

    python benchmarks/optimize_table.py REPORT.json... [--ceilings CEILINGS.json] [--md]

The roofline bound of a group is its work (bytes moved and FLOPs, from the report's roofline data when
the profile level ran, else counted here on `meta` tensors from the task file the report names) over
the roof: the report's own measured roof where it has one, else the `--ceilings` file
(`benchmarks/device_ceilings.py --json` or a profiling run's `ceilings.json`). The source of each
roof is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from diagnose.profiling.ceilings import Ceilings
from diagnose.profiling.roofline import Roof, Work, bound, roof_for
from diagnose.records import Report, report_from_dict
from diagnose.report.scores import medians


def work_of(report: Report) -> dict[str, Work]:
    if report.roofline is not None and report.roofline.work:
        return {w.group: w for w in report.roofline.work}
    from diagnose.profiling.work import count_work_offline
    from diagnose.task import import_task_file

    task = Path(report.task)
    if not task.is_file():  # a sweep's copy of the suite, gone since: the suite's own file by its id
        task = Path(__file__).parent / "npukernel" / task.parent.name / task.name
    if not task.is_file():
        return {}
    module = import_task_file(str(task))
    groups = medians(report.baseline, "candidate") if report.baseline is not None else {}
    return {g: count_work_offline(module, g)[0] for g in groups}


def roof_of(report: Report, dtype: str, ceilings: Ceilings | None) -> tuple[Roof | None, str]:
    roof = report.roofline.roof if report.roofline is not None else None
    if roof is not None and roof.dtype == dtype:
        return roof, "report"
    if ceilings is not None:
        return roof_for(ceilings, dtype), "ceilings file"
    return None, "-"


def rows(report: Report, ceilings: Ceilings | None) -> list[dict]:
    best = report.best_entry
    initial = medians(report.baseline, "candidate") if report.baseline is not None else {}
    after = medians(best[1], "candidate") if best else {}
    # The best candidate's own run timed the initial kernel beside it: the speedup is that ratio.
    initial_same_run = medians(best[1], "initial") if best else {}
    work = work_of(report)
    out = []
    for group, initial_ms in initial.items():
        w = work.get(group)
        roof, source = roof_of(report, w.dtype, ceilings) if w else (None, "-")
        bound_ms = bound(w, roof)[2] * 1e3 if (w and roof) else None
        best_ms = after.get(group)
        same = initial_same_run.get(group)
        out.append(
            {
                "task": Path(report.task).stem,
                "group": group,
                "initial_ms": initial_ms,
                "best_ms": best_ms,
                "speedup": same / best_ms if (same and best_ms) else None,
                "initial_roofline": bound_ms / initial_ms if bound_ms else None,
                "best_roofline": bound_ms / best_ms if (bound_ms and best_ms) else None,
                "roof": source,
                "rewrites": ", ".join(best[0].made_by) if best else "-",
                "deepest_level": report.deepest_level or "-",
                "wall_s": report.wall_s,
            }
        )
    return out


def fmt(value, spec: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--ceilings", type=Path)
    args = parser.parse_args()
    ceilings = None
    if args.ceilings:
        data = json.loads(args.ceilings.read_text())
        ceilings = Ceilings.from_dict(data.get("ceilings", data))
    header = [
        "task",
        "group",
        "initial ms",
        "best ms",
        "speedup",
        "initial % roofline",
        "best % roofline",
        "roof",
        "rewrites",
        "deepest level",
        "wall s",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for path in args.reports:
        for r in rows(report_from_dict(json.loads(path.read_text())), ceilings):
            print(
                "| "
                + " | ".join(
                    [
                        r["task"],
                        r["group"],
                        fmt(r["initial_ms"], ".4g"),
                        fmt(r["best_ms"], ".4g"),
                        fmt(r["speedup"], ".2f") + ("x" if r["speedup"] else ""),
                        fmt(r["initial_roofline"] and 100 * r["initial_roofline"], ".0f"),
                        fmt(r["best_roofline"] and 100 * r["best_roofline"], ".0f"),
                        r["roof"],
                        r["rewrites"],
                        r["deepest_level"],
                        fmt(r["wall_s"], ".0f"),
                    ]
                )
                + " |"
            )


if __name__ == "__main__":
    main()
