"""Static estimates of the launch-configuration variants, on a machine with no device, and their rank
agreement with the times measured on a GPU.

    python benchmarks/profiling_static.py --json static_estimates.json            # estimate (CPU)
    python benchmarks/profiling_static.py --json E.json --measured sweep.json \\
        --ceilings ceilings.json --report spearman.json                           # compare

The estimate is what `diagnose profile` shows with no device: `profile_task` on the device group,
offline compile for `--target` (cuda:sm90), the model in `diagnose/profiling/static/estimate.py`
against the target's nominal ceilings. With `--ceilings` (a measured `profiling_ceilings.py` JSON) the
same features are estimated again against the measured roof. Spearman's rank correlation is reported
over all variants pooled and within each family (ties get average ranks).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VARIANTS = ROOT / "benchmarks" / "profiling_variants"


def ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rho: Pearson's correlation of the ranks."""
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else None


def estimate_all(target: str) -> dict:
    from diagnose.profiling.profile import ProfileOptions, profile_task
    from diagnose.task import import_task_file
    from diagnose.verify.inputs import group_table

    out = {}
    for path in sorted(VARIANTS.glob("*.py")):
        module = import_task_file(path)
        group = next(g for g in group_table(module) if not g.startswith("test"))
        result = profile_task(path, ProfileOptions(device="cuda", target=target, groups=(group,)))
        out[path.stem] = {
            "family": module.FAMILY,
            "config": module.CONFIG,
            "group": group,
            "target": result.target,
            "ceilings": result.ceilings.source,
            "estimate_s": sum(k.estimate.time_s for k in result.kernels),
            "bottleneck": result.kernels[0].estimate.bottleneck if result.kernels else None,
            "features": [k.features.to_dict() for k in result.kernels],
        }
        print(
            f"{path.stem:<32} {out[path.stem]['estimate_s'] * 1e3:8.4f} ms (estimate)  {out[path.stem]['bottleneck']}",
            flush=True,
        )
    return out


def reestimate(entry: dict, ceilings_json: dict, target: str) -> float:
    from diagnose.profiling.ceilings import Ceilings
    from diagnose.profiling.profile import _features
    from diagnose.profiling.static.estimate import estimate, hardware
    from diagnose.targets import lookup

    ceilings = Ceilings.from_dict(ceilings_json["ceilings"])
    hw = hardware(ceilings, lookup(target).sm_count)
    return sum(estimate(_features(dict(f)), hw).time_s for f in entry["features"])


def compare(estimates: dict, measured: dict, ceilings_json: dict | None, target: str) -> dict:
    rows = []
    for r in measured["rows"]:
        e = estimates.get(r["variant"])
        if e is None or not r.get("median_ms") or not r.get("correct"):
            continue
        row = {
            "variant": r["variant"],
            "family": r["family"],
            "measured_ms": r["median_ms"],
            "estimate_nominal_ms": e["estimate_s"] * 1e3,
            "bottleneck": e["bottleneck"],
        }
        if ceilings_json:
            row["estimate_measured_ms"] = reestimate(e, ceilings_json, target) * 1e3
        rows.append(row)
    report: dict = {"variants": len(rows), "rows": rows}
    for key in ("estimate_nominal_ms", "estimate_measured_ms"):
        if rows and key in rows[0]:
            report[f"spearman_pooled_{key}"] = spearman([r[key] for r in rows], [r["measured_ms"] for r in rows])
            per = {}
            for family in sorted({r["family"] for r in rows}):
                mine = [r for r in rows if r["family"] == family]
                per[family] = spearman([r[key] for r in mine], [r["measured_ms"] for r in mine])
            report[f"spearman_by_family_{key}"] = per
    return report


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True, help="estimates file (written, or read with --measured)")
    parser.add_argument("--target", default="cuda:sm90")
    parser.add_argument("--measured", default=None)
    parser.add_argument("--ceilings", default=None)
    parser.add_argument("--report", default=None)
    args = parser.parse_args()
    path = Path(args.json)
    if args.measured is None:
        path.write_text(json.dumps(estimate_all(args.target), indent=1))
        return 0
    estimates = json.loads(path.read_text())
    measured = json.loads(Path(args.measured).read_text())
    ceilings = json.loads(Path(args.ceilings).read_text()) if args.ceilings else None
    report = compare(estimates, measured, ceilings, args.target)
    print(f"{'variant':<32} {'measured':>9} {'est(nom)':>9} {'est(meas)':>9}  bottleneck")
    for r in report["rows"]:
        print(
            f"{r['variant']:<32} {r['measured_ms']:9.4f} {r['estimate_nominal_ms']:9.4f} "
            f"{r.get('estimate_measured_ms', float('nan')):9.4f}  {r['bottleneck']}"
        )
    for key, value in report.items():
        if key.startswith("spearman"):
            print(f"{key}: {value}")
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
