"""Run `diagnose profile` (the `profile_command` function) on examples, one process each call.

    python3 benchmarks/profiling_examples.py EXAMPLE GROUP OUT_DIR [--ncu] [--device cuda]

Prints what `diagnose profile examples/EXAMPLE.py --group GROUP [--ncu]` prints, then its wall time;
the plot, `<task>.profile.json` and the ncu pages go to OUT_DIR.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from diagnose.profiling.cli import profile_command

    parser = argparse.ArgumentParser()
    parser.add_argument("example")
    parser.add_argument("group")
    parser.add_argument("out")
    parser.add_argument("--ncu", action="store_true")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--timeout", type=float, default=80.0, help="seconds each worker may run")
    parser.add_argument("--ncu-timeout", type=float, default=60.0, help="seconds the ncu run and its exports may take")
    args = parser.parse_args()
    begin = time.time()
    code, text = profile_command(
        str(ROOT / "examples" / f"{args.example}.py"),
        device=args.device,
        ncu=args.ncu,
        plot_dir=args.out,
        groups=[args.group],
        timeout_s=args.timeout,
        ncu_timeout_s=args.ncu_timeout,
    )
    print(text, end="")
    print(f"[profile {args.example}: exit {code}, {time.time() - begin:.1f} s]")
    return code


if __name__ == "__main__":
    sys.exit(main())
