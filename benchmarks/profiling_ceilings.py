"""Measure (or read from the cache) this GPU's ceilings through `diagnose.profiling.ceilings`.

    python3 benchmarks/profiling_ceilings.py [--json OUT] [--refresh]

The measurement itself lives in `diagnose/profiling/ceilings.py` (copy bandwidth, bf16/fp16/tf32/fp32
matmul, launch overhead, with the harness's timing protocol) and is cached under
`$DIAGNOSE_CACHE_DIR/profiling/ceilings/`; this script asks for it twice, so the second answer shows the
cache at work, and prints a table. It replaces `benchmarks/device_ceilings.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    from diagnose.profiling.ceilings import ceilings_for

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    parser.add_argument("--refresh", action="store_true")
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args()
    begin = time.time()
    ceilings, hit = ceilings_for("cuda", refresh=args.refresh, timeout_s=args.timeout)
    first = time.time() - begin
    begin = time.time()
    _, hit_again = ceilings_for("cuda", timeout_s=args.timeout)
    second = time.time() - begin
    print(f"device: {ceilings.device}; {dict(ceilings.identity)}")
    print(
        f"first call: {'cache' if hit else 'measured'} in {first:.1f} s; second call: {'cache' if hit_again else 'measured'} in {second:.1f} s"
    )
    print(f"{'ceiling':<26} {'value':>12}")
    print(f"{'copy (read+write)':<26} {ceilings.copy_bytes_per_s / 1e12:>9.3f} TB/s")
    for dtype, rate in ceilings.matmul_flops_per_s:
        print(f"{'matmul ' + dtype + ' 8192^3':<26} {rate / 1e12:>6.1f} TFLOP/s")
    print(f"{'launch overhead':<26} {ceilings.launch_overhead_s * 1e6:>9.2f} us")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "ceilings": ceilings.to_dict(),
                    "first_call_from_cache": hit,
                    "second_call_from_cache": hit_again,
                    "first_call_s": first,
                    "second_call_s": second,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
