"""Wall time of `diagnose inspect` per kernel file: cold cache, warm cache, warm kernels only.

    python benchmarks/ir_speed.py [--target cuda:sm90] [--repeat 3] [--out results.json] [FILE ...]

- cold: an empty cache directory; the worker process imports torch and the file, compiles, extracts;
- warm: the same request again; answered from the inspect cache, no worker starts (in this
  process; `warm process` adds a fresh interpreter, as a `diagnose inspect` command pays);
- kernels-warm: the inspect cache emptied, Triton's kernel cache kept (a new request on a known
  compile: the worker starts but compiles nothing).

Targets: under 3 s cold and 0.3 s warm for the 128x128x64 fp16 matmul (`matmul_wgmma.py`) on one
target. Each figure is the median of `--repeat` runs, each cold run in a fresh cache directory.
Not a test: numbers depend on the machine (CI's has 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_FILES = [
    "tests/fixtures/ir/matmul_wgmma.py",
    "tests/fixtures/ir/vec_add_aligned.py",
    "tests/fixtures/ir/inlined_helpers.py",
    "tests/fixtures/ir/autotuned.py",
    "tests/fixtures/ir/task_vector_add.py",
]


def timed(fn) -> float:
    start = time.perf_counter()
    code, _ = fn()
    if code not in (0, 1):
        raise SystemExit(f"inspect returned {code}")
    return time.perf_counter() - start


def in_new_process(path: str, target: str) -> tuple[int, str]:
    code = f"from diagnose.ir.cli import inspect_command; inspect_command({path!r}, target={target!r})"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, check=False
    )
    return proc.returncode, ""


def measure(path: str, target: str, repeat: int) -> dict:
    from diagnose.ir import cli

    cold, warm, warm_process, kernels_warm = [], [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="diagnose-bench-") as cache:
            os.environ["DIAGNOSE_CACHE_DIR"] = cache
            run = lambda: cli.inspect_command(path, target=target)
            cold.append(timed(run))
            warm.append(timed(run))
            warm_process.append(timed(lambda: in_new_process(path, target)))
            shutil.rmtree(Path(cache) / "ir" / "inspect")
            kernels_warm.append(timed(run))
    return {
        "file": path,
        "target": target,
        "cold_s": statistics.median(cold),
        "warm_s": statistics.median(warm),
        "warm_process_s": statistics.median(warm_process),
        "kernels_warm_s": statistics.median(kernels_warm),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("--target", default="cuda:sm90")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="also write the rows as JSON here")
    args = parser.parse_args()
    rows = [measure(str(ROOT / f) if not os.path.isabs(f) else f, args.target, args.repeat) for f in args.files]
    from importlib import metadata

    print(
        f"# {platform.node()}  {os.cpu_count()} cores  python {platform.python_version()}  "
        f"triton {metadata.version('triton')}  torch {metadata.version('torch')}  target {args.target}"
    )
    print(f"{'file':<24} {'cold s':>7} {'warm s':>7} {'warm process s':>15} {'kernels-warm s':>15}")
    for r in rows:
        print(
            f"{Path(r['file']).name:<24} {r['cold_s']:>7.2f} {r['warm_s']:>7.3f} {r['warm_process_s']:>15.3f} {r['kernels_warm_s']:>15.2f}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
