"""Where rewrites can act on a real project's kernel modules, and whether what they write stays correct,
without a device: for each module, the task `optimize` would make of it (its largest captured call),
whether each rewrite holds there (on which kernel, with what search space) or why it declines, and with
`--verify` whether the rewritten module passes the harness on the CPU interpreter against the original
(the task's small test groups, the project's own captured test sizes), with `--compile TARGET` whether
its launches compile offline for TARGET (what the interpreter does not check: loop-carried types,
layouts). A measurement, not a test.

    PYTHONPATH=PROJECT/src python benchmarks/rewrite_reach.py --root PROJECT/src/pkg/ops \\
        --rewrite prefetch-next-row --rewrite programs-per-sm --verify rms_norm layer_norm ...

A rewrite chosen by timing only (`launch-options`, `programs-per-sm`) is verified with the first
configuration of its search space that changes the source. The launches are the project's
`.diagnose/launches` (found from each module upwards).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rewritten(rewrite, ctx, pre) -> str | None:
    """The source the rewrite writes: as planned, or for a tunable one its first configuration that
    changes something (its current values write nothing)."""
    from diagnose.rewrite.rewrite import NotApplicable

    for values in (rewrite.search_space(ctx, pre.plan) if rewrite.tunable else [{}]):
        try:
            return rewrite.apply(ctx.with_params(values))
        except NotApplicable:
            continue
    return None


def candidate_task(path: Path, source: str, cache: Path):
    from diagnose.task.kernel_module import module_task

    candidate = cache / "candidates" / path.name
    candidate.parent.mkdir(parents=True, exist_ok=True)
    candidate.write_text(source)
    return module_task(path, cache, candidate=candidate)


def compiled(task, target: str) -> str:
    """`compiles`, or the first error, of the rewritten module's launches compiled offline for `target`."""
    from diagnose.optimizer.search import compile_batch
    from diagnose.targets import lookup

    path = str(task.candidate_path)
    result = compile_batch(str(task.reference_path), [path], lookup(target), 1, None).get(path, {})
    errors = result.get("errors") or ([] if result.get("kernels") else ["no launch compiled"])
    return "compiles" if not errors else f"does not compile: {errors[0].splitlines()[0][:120]}"


def verified(task) -> str:
    """`passed`, or the first failure, of the rewritten module against the original on the interpreter."""
    from diagnose.verify.harness import CheckOptions, verify

    verdict = verify(task, CheckOptions(device="cpu", seeds=(0, 1), soak=2, initial=task.reference_path))
    if verdict.passed:
        return "passed"
    if verdict.failure is not None:
        return f"failed: {verdict.failure.kind}: {verdict.failure.message.splitlines()[-1][:100]}"
    bad = [c for c in (*verdict.cases, *verdict.checks) if not c.passed]
    return f"failed: {bad[0]}"[:140] if bad else "failed"


def main() -> None:
    from diagnose.rewrite.rewrite import RewriteContext
    from diagnose.rewrite.table import REWRITES
    from diagnose.task import harness
    from diagnose.task.kernel_module import module_task

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the folder holding the modules")
    parser.add_argument("--rewrite", action="append", help="rewrite ids (default: launch-options)")
    parser.add_argument("--verify", action="store_true", help="verify each rewritten module on the interpreter")
    parser.add_argument("--compile", metavar="TARGET", help="compile each rewritten module offline (cuda:sm90)")
    parser.add_argument("modules", nargs="+", help="module names (rms_norm) or file names")
    args = parser.parse_args()
    ids = args.rewrite or ["launch-options"]
    held = {i: 0 for i in ids}
    passed = {i: 0 for i in ids}
    print("| module | rewrite | holds | kernel, or why not | search space | compiled / verified |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="diagnose-reach-") as folder:
        cache = Path(folder)
        for name in args.modules:
            path = args.root / (name if name.endswith(".py") else f"{name}.py")
            try:
                task = module_task(path, cache)
            except Exception as exc:  # noqa: BLE001 - a module that cannot become a task is a row too
                print(f"| {path.stem} | | error | {type(exc).__name__}: {str(exc).splitlines()[0][:120]} | | |")
                continue
            ctx = RewriteContext(task.reference_path.read_text(), str(task.reference_path))
            for rewrite_id in ids:
                rewrite = REWRITES[rewrite_id]
                pre = rewrite.check(ctx)
                space = len(rewrite.search_space(ctx, pre.plan)) if pre.holds and rewrite.tunable else 0
                held[rewrite_id] += pre.holds
                outcome = ""
                if pre.holds and (args.verify or args.compile):
                    source = rewritten(rewrite, ctx, pre)
                    if source is None:
                        outcome = "writes nothing"
                    else:
                        edited = candidate_task(path, harness.user_part(source), cache)
                        steps = ([compiled(edited, args.compile)] if args.compile else []) + (
                            [verified(edited)] if args.verify else [])
                        outcome = "; ".join(steps)
                    passed[rewrite_id] += all(o in ("passed", "compiles") for o in outcome.split("; "))
                print(f"| {path.stem} | {rewrite_id} | {'yes' if pre.holds else 'no'} | {pre.reason[:160]} | "
                      f"{space or ''} | {outcome} |", flush=True)
    for rewrite_id in ids:
        what = " and ".join(w for w, on in (("compiled", args.compile), ("verified", args.verify)) if on)
        tail = f", {what} on {passed[rewrite_id]}" if what else ""
        print(f"\n{rewrite_id} holds on {held[rewrite_id]} of {len(args.modules)} modules{tail}")


if __name__ == "__main__":
    main()
