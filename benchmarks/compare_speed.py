"""How long the harness's output comparison takes on this host, per output size and dtype.

    python benchmarks/compare_speed.py [--log2 26 28] [--repeats 3] [--jobs K] [--device cuda]

Prints a Markdown table: elements, dtype, case (equal: the candidate's output is the reference's,
bit for bit; near: within tolerance everywhere; one-off: one element outside; below-atol: every value
under the absolute tolerance, as an fp16 softmax over wide rows, and the output near it, so that the
norm test decides; ghost: all NaN, compared as the ghost replay compares, stopping at the first failing
steps), median seconds of
`diagnose.verify.compare.compare_one`, and the GB/s of reference plus output bytes it reads. The
comparison runs in the parent process on the CPU whatever the device, once per output of every case
of every verification, so on GiB outputs it is a visible part of a verification's wall time (the
`compare` phase of `diagnose check`).

`--jobs K` runs K comparisons at once on threads of one process, as a sweep's `--jobs K` does in its
parent (the seconds are each one's own, GB/s the total). `--device cuda` moves both tensors to the
device inside the timed region and compares there: what comparing on the device in the parent would
cost, transfer included (the harness does not do this).

`--beside T` times every comparison while another process draws random numbers on a team of T torch
threads, as the baselines' worker draws and compiles beside a `check`'s comparisons on a device (there the
parent's comparisons took 4-14 s, session 37).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from diagnose.verify.compare import compare_one


def cases(n: int, dtype: torch.dtype) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    ref = torch.randn(n, generator=generator, dtype=torch.float32).to(dtype)
    near = (ref.float() * (1 + 1e-5)).to(dtype)
    off = ref.clone()
    off[n // 2] += 1.0
    small = (ref.float() * 1e-5).to(dtype)
    small_near = (small.float() * (1 + 1e-3 * torch.randn(n, generator=generator))).to(dtype)
    ghost = torch.full_like(ref, float("nan"))
    return {
        "equal": (ref, ref.clone()),
        "near": (ref, near),
        "one-off": (ref, off),
        "below-atol": (small, small_near),
        "ghost": (ref, ghost),
    }


def timed_compare(ref: torch.Tensor, out: torch.Tensor, device: str, early: bool = False) -> float:
    start = time.perf_counter()
    if device != "cpu":
        ref, out = ref.to(device), out.to(device)
    compare_one(ref, out, early=early)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, nargs="+", default=[24, 26, 28], help="Output sizes as powers of two.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="Comparisons at once, on threads of this process.")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: compare on the device, transfer included.")
    parser.add_argument("--beside", type=int, default=0, help="Threads of a busy torch process beside (0: none).")
    args = parser.parse_args()
    busy = None
    if args.beside:
        loop = f"import torch\ntorch.set_num_threads({args.beside})\nwhile True: torch.randn(1 << 24)"
        busy = subprocess.Popen([sys.executable, "-c", loop])
    try:
        table(args)
    finally:
        if busy is not None:
            busy.kill()


def table(args: argparse.Namespace) -> None:
    beside = f", beside a process busy on {args.beside} threads" if args.beside else ""
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.jobs} at once, on {args.device}{beside}"
    )
    print("| elements | dtype | case | median s | GB/s read |")
    print("|---|---|---|---|---|")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for log2 in args.log2:
            for dtype in (torch.float32, torch.bfloat16):
                for name, (ref, out) in cases(1 << log2, dtype).items():
                    seconds = []
                    for _ in range(args.repeats):
                        seconds += pool.map(
                            lambda _: timed_compare(ref, out, args.device, name == "ghost"), range(args.jobs)
                        )
                    median = statistics.median(seconds)
                    gbs = args.jobs * 2 * ref.numel() * ref.element_size() / median / 1e9
                    print(
                        f"| 2^{log2} | {str(dtype).removeprefix('torch.')} | {name} | {median:.3f} | {gbs:.1f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
