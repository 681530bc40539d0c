"""Where `launch-options` can act on a real project's kernel modules, without a device: for each module,
the task `optimize` would make of it (its largest captured call), and whether the rewrite holds there,
on which launch, and what it would search, or why it declines. A measurement, not a test.

    PYTHONPATH=PROJECT/src python benchmarks/launch_options_reach.py --root PROJECT/src/pkg/ops rms_norm layer_norm ...

The launches are the project's `.diagnose/launches` (found from each module upwards).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from diagnose.rewrite.rewrite import RewriteContext
    from diagnose.rewrite.table import REWRITES
    from diagnose.task.kernel_module import module_task

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the folder holding the modules")
    parser.add_argument("modules", nargs="+", help="module names (rms_norm) or file names")
    args = parser.parse_args()
    rewrite = REWRITES["launch-options"]
    held = 0
    print("| module | holds | launch, or why not | search space |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="diagnose-reach-") as cache:
        for name in args.modules:
            path = args.root / (name if name.endswith(".py") else f"{name}.py")
            try:
                task = module_task(path, Path(cache))
            except Exception as exc:  # noqa: BLE001 - a module that cannot become a task is a row too
                print(f"| {path.stem} | error | {type(exc).__name__}: {str(exc).splitlines()[0][:120]} | |")
                continue
            ctx = RewriteContext(task.reference_path.read_text(), str(task.reference_path))
            pre = rewrite.check(ctx)
            space = len(rewrite.search_space(ctx, pre.plan)) if pre.holds else 0
            held += pre.holds
            print(f"| {path.stem} | {'yes' if pre.holds else 'no'} | {pre.reason[:160]} | {space or ''} |")
    print(f"\nlaunch-options holds on {held} of {len(args.modules)} modules")


if __name__ == "__main__":
    main()
