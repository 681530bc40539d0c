"""Measure a device's ceilings (copy bandwidth, matmul throughput, launch overhead) and print a table.

Kept for `benchmarks/h200/foundation.sh`; the measurement lives in `diagnose/profiling/ceilings.py`
(`benchmarks/profiling_ceilings.py` adds the on-disk cache). `--json OUT` also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("device_ceilings: no CUDA device here", file=sys.stderr)
        return 2
    from diagnose.profiling.ceilings import measure

    ceilings = measure("cuda")
    print(json.dumps(ceilings.to_dict(), indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(ceilings.to_dict(), handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
