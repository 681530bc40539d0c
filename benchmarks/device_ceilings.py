"""Measure a device's ceilings: device-to-device copy bandwidth and dense matmul throughput.

Run on a GPU machine: `python benchmarks/device_ceilings.py [--json OUT]`. Uses the harness's timing
protocol (CUDA events, L2 flushed, interleaved batches until the median is stable). Copy bandwidth
counts bytes read plus bytes written; matmul throughput is 2*M*N*K over the median time, on random data.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from diagnose.verify.timing import EventTimer, measure


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("device_ceilings: no CUDA device here", file=sys.stderr)
        return 2
    timer = EventTimer("cuda")
    rows = []
    n = 2**30  # 4 GiB fp32 per buffer: far beyond the L2
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    (copy,) = measure(timer, {"copy": lambda: dst.copy_(src)}, "4GiB")
    moved = 2 * n * src.element_size()
    rows.append(("copy 4 GiB fp32", copy.median_ms, moved / copy.median_ms / 1e9, "TB/s"))
    src = dst = None  # free 8 GiB before the matmuls
    for dtype, label in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        m = k = nn = 8192
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, nn, device="cuda", dtype=dtype)
        (mm,) = measure(timer, {"mm": lambda: a @ b}, label)
        rows.append((f"matmul {label} 8192^3", mm.median_ms, 2 * m * nn * k / mm.median_ms / 1e9, "TFLOP/s"))
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, cuda {torch.version.cuda}")
    print(f"{'measurement':<22} {'median ms':>10} {'rate':>10}")
    for name, ms, rate, unit in rows:
        print(f"{name:<22} {ms:>10.4f} {rate:>10.2f} {unit}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                       "rows": [dict(name=r[0], median_ms=r[1], rate=r[2], unit=r[3]) for r in rows]}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
