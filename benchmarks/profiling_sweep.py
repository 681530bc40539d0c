"""Time the launch-configuration variants on a GPU, family by family, with the harness's protocol.

    python3 benchmarks/profiling_sweep.py --json OUT.json [--deadline EPOCH_SECONDS]

For each family (vector_add, softmax, layernorm, matmul, in that order) the variants in
`benchmarks/profiling_variants/` share one input set, drawn on the GPU from the family's device group
(the task's own factories under `torch.device("cuda")`, seed 0). Each variant is compiled, checked
against the reference on the GPU (`diagnose.verify.compare.compare_one`, the harness's tolerances) and
then all variants of the family are timed interleaved with `diagnose.verify.timing.measure` (CUDA
events, L2 flushed, batches until each median is stable). A family or variant that would start after
`--deadline` is skipped and listed, so the sweep keeps what it finished. This is a benchmark script:
the variants are our own files and run in this process, not in isolated workers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VARIANTS = ROOT / "benchmarks" / "profiling_variants"
FAMILIES = ("vector_add", "softmax", "layernorm", "matmul")


def main() -> int:
    import torch

    from diagnose.runtime.devices import versions
    from diagnose.task import import_task_file
    from diagnose.verify.compare import compare_one
    from diagnose.verify.inputs import group_table
    from diagnose.verify.jobs import build_model
    from diagnose.verify.timing import EventTimer, measure

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--deadline", type=float, default=float("inf"))
    args = parser.parse_args()
    timer = EventTimer("cuda")
    rows, skipped = [], []
    begin = time.time()
    for family in FAMILIES:
        files = sorted(VARIANTS.glob(f"{family}_*.py"))
        if time.time() > args.deadline:
            skipped += [f.stem for f in files]
            continue
        modules = {f.stem: import_task_file(f) for f in files}
        first = next(iter(modules.values()))
        table = group_table(first)
        group = next(g for g in table if not g.startswith("test"))
        torch.manual_seed(0)
        with torch.device("cuda"):
            inputs = list(table[group]())
        init = list(first.get_init_inputs())
        eager = build_model(first.Model, init, "cuda")
        state = {k: v.detach().cpu() for k, v in eager.state_dict().items()}
        with torch.no_grad():
            expected = eager(*inputs)
        variants = {}
        for name, module in modules.items():
            if time.time() > args.deadline:
                skipped.append(name)
                continue
            row = {"variant": name, "family": family, "group": group, "config": getattr(module, "CONFIG", {})}
            try:
                model = build_model(module.ModelNew, init, "cuda", state)
                with torch.no_grad():
                    out = model(*inputs)
                torch.cuda.synchronize()
                ok, max_abs, _, why = compare_one(expected, out)
                row.update(correct=ok, max_abs_err=max_abs, reason=why)
                variants[name] = lambda m=model, x=inputs: m(*x)
            except Exception as exc:  # noqa: BLE001 - a variant that fails is a row, not the end of the sweep
                row.update(correct=False, reason=f"{type(exc).__name__}: {exc}"[:300])
            rows.append(row)
        if variants:
            with torch.no_grad():
                for t in measure(timer, variants, group):
                    row = next(r for r in rows if r["variant"] == t.variant)
                    row.update(median_ms=t.median_ms, p20_ms=t.p20_ms, p80_ms=t.p80_ms, reps=t.reps, stable=t.stable)
        print(f"{family}: {len(variants)} timed, {time.time() - begin:.0f} s", flush=True)
        del inputs, expected, variants
        torch.cuda.empty_cache()
    result = {
        "device": torch.cuda.get_device_name(0),
        "versions": versions("cuda"),
        "rows": rows,
        "skipped": skipped,
        "seconds": time.time() - begin,
    }
    Path(args.json).write_text(json.dumps(result, indent=1))
    print(f"{'variant':<32} {'median ms':>10} {'ok':>3}")
    for r in rows:
        median = f"{r['median_ms']:.4f}" if r.get("median_ms") else "-"
        print(f"{r['variant']:<32} {median:>10} {'y' if r.get('correct') else 'N':>3}")
    if skipped:
        print(f"skipped (deadline): {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
