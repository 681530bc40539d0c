"""How long the harness's tensor files take to write and read back on this host, per GiB.

    python benchmarks/tensor_io_speed.py [--gib 1] [--dir /tmp] [--repeats 3]

Every value a verification passes between its processes travels as a file (`diagnose/verify/tensors.py`):
the reference job writes each case's inputs and outputs, the candidate job reads the inputs and writes
its outputs, the parent reads both. Prints a Markdown table: way, median seconds, GiB/s. The ways:
`save` (`tensors.save`); `read in, summed` (`torch.load` as the harness did before it mapped files, then
a sum over the value, as the next step reads it); `mapped, summed` (`tensors.load`, then the same sum:
the pages are read there).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from diagnose.verify import tensors


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="Where the files go (the harness: the temp dir).")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    value = torch.randn(int(args.gib * 2**30) // 4)
    ways = {
        "save": lambda path: tensors.save([value], path),
        "read in, summed": lambda path: torch.load(path, map_location="cpu", weights_only=True)[0].sum(),
        "mapped, summed": lambda path: tensors.load(path)[0].sum(),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "value.pt"
        for _ in range(args.repeats):
            for name, way in ways.items():
                times[name].append(seconds(lambda: way(path)))
    print(f"torch {torch.__version__}, {args.gib:g} GiB of fp32 in {args.dir}, median of {args.repeats}")
    print("| way | median s | GiB/s |")
    print("|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {args.gib / median:.2f} |")


if __name__ == "__main__":
    main()
