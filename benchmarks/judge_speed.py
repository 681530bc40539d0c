"""How long the parent's reading of a candidate's outputs takes (`diagnose.verify.judge.judge`), for outputs
the size of `examples/softmax.py`'s device groups, idle or beside a busy process.

    python benchmarks/judge_speed.py [--beside T] [--repeats 2]

Four cases (a 16384x4096 fp32 and an 8192x8192 fp16 row softmax, two seeds each), every candidate output
written by another process as the candidate's job writes it (`tensors.save`), then judged as `check` does
against reference outputs held in this process. `--beside T`: while another process draws random numbers on
a team of T torch threads, as the baselines' worker works beside a `check`'s comparisons on a device.
Prints the seconds of each `judge` call.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from diagnose.verify.judge import HeldCase, judge

GROUPS = {"fp32": (16384, 4096, torch.float32), "fp16": (8192, 8192, torch.float16)}
WRITE = "import sys, torch; from diagnose.verify import tensors; tensors.save(torch.load(sys.argv[1]), sys.argv[2])"


def cases(folder: Path) -> tuple[list[dict], list[dict], dict]:
    held, cases, results = {}, [], []
    for group, (rows, cols, dtype) in GROUPS.items():
        for seed in (0, 1):
            generator = torch.Generator().manual_seed(seed)
            ref = torch.softmax(torch.randn(rows, cols, generator=generator), -1).to(dtype)
            out = (ref.float() * (1 + 1e-6 * torch.randn(rows, cols, generator=generator))).to(dtype)
            held[(group, seed, "check")] = HeldCase([ref])
            plain, saved = folder / f"{group}{seed}.in.pt", folder / f"{group}{seed}.pt"
            torch.save([out], plain)
            subprocess.run([sys.executable, "-c", WRITE, str(plain), str(saved)], check=True)
            plain.unlink()
            cases.append({"group": group, "seed": seed, "role": "check", "mutated": [], "inputs": None})
            results.append({"outputs": str(saved), "post_inputs": None})
    return cases, results, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beside", type=int, default=0, help="Threads of a busy torch process beside (0: none).")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    beside = f", beside a process busy on {args.beside} threads" if args.beside else ", idle"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads{beside}")
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            found = cases(Path(folder))
            busy = None
            if args.beside:
                loop = f"import torch\ntorch.set_num_threads({args.beside})\nwhile True: torch.randn(1 << 24)"
                busy = subprocess.Popen([sys.executable, "-c", loop])
                time.sleep(2)
            try:
                start = time.perf_counter()
                judged = judge(*found, {}, lambda name: None)
                print(f"judge {time.perf_counter() - start:.2f} s, passed {[c.passed for c in judged.cases]}")
            finally:
                if busy is not None:
                    busy.kill()


if __name__ == "__main__":
    main()
