"""What one worker job costs when it does nothing: the harness's fixed price per job (fork from the warm
zygote, request and result files, the exit reaching the parent), which every reference, candidate, ghost
and timing job pays.

    python benchmarks/job_latency.py [--jobs 40]

Prints the mean wall milliseconds per job of `runner.call` on a trivial entry, after one warm-up job
(which starts the zygote: its imports are not counted). Nothing here is a test: it measures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from diagnose.runtime.runner import call

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    args = parser.parse_args()
    warm = call("os.path:basename", "/a/b")
    if not warm.ok:
        raise SystemExit(f"the warm-up job failed: {warm.failure}")
    start = time.perf_counter()
    for _ in range(args.jobs):
        result = call("os.path:basename", "/a/b")
        if not result.ok:
            raise SystemExit(f"a job failed: {result.failure}")
    per_job = (time.perf_counter() - start) / args.jobs * 1000
    print(f"| jobs | mean wall per job |\n|---|---|\n| {args.jobs} | {per_job:.1f} ms |")


if __name__ == "__main__":
    main()
