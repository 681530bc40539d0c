"""How long the harness's output comparison takes on this host, per output size and dtype.

    python benchmarks/compare_speed.py [--log2 26 28] [--repeats 3]

Prints a Markdown table: elements, dtype, case (equal: the candidate's output is the reference's,
bit for bit; near: within tolerance everywhere; one-off: one element outside), median seconds of
`diagnose.verify.compare.compare_one`, and the GB/s of reference plus output bytes it reads. The
comparison runs in the parent process on the CPU whatever the device, once per output of every case
of every verification, so on GiB outputs it is a visible part of a verification's wall time (the
`compare` phase of `diagnose check`).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from diagnose.verify.compare import compare_one


def cases(n: int, dtype: torch.dtype) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    ref = torch.randn(n, generator=generator, dtype=torch.float32).to(dtype)
    near = (ref.float() * (1 + 1e-5)).to(dtype)
    off = ref.clone()
    off[n // 2] += 1.0
    return {"equal": (ref, ref.clone()), "near": (ref, near), "one-off": (ref, off)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, nargs="+", default=[24, 26, 28], help="Output sizes as powers of two.")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| elements | dtype | case | median s | GB/s read |")
    print("|---|---|---|---|---|")
    for log2 in args.log2:
        for dtype in (torch.float32, torch.bfloat16):
            for name, (ref, out) in cases(1 << log2, dtype).items():
                seconds = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    compare_one(ref, out)
                    seconds.append(time.perf_counter() - start)
                median = statistics.median(seconds)
                gbs = 2 * ref.numel() * ref.element_size() / median / 1e9
                print(f"| 2^{log2} | {str(dtype).removeprefix('torch.')} | {name} | {median:.3f} | {gbs:.1f} |", flush=True)


if __name__ == "__main__":
    main()
