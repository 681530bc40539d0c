"""Every rewrite's precondition and transform over every Triton file of real checkouts, without IR
evidence: how many files each rewrite applies to, and every exception other than `NotApplicable` (a
rewrite must say no to code it does not understand, never raise).

    python benchmarks/rewrite_reach.py ../corpus/tritonbench/data/TritonBench_G_v1 ../corpus/liger/src \
        ../corpus/flaggems/src

Prints the number of files read (and how many any rewrite applies to), the files each rewrite applied to, and one row per kind of crash
(rewrite, exception, line) with a count, one example file and the message. `--reasons ID[,ID...]` also
prints, for those rewrites, the ten commonest reasons they declined a file (kernel names and numbers
folded, so one reason counts once however many kernels give it).

    python benchmarks/rewrite_reach.py --reasons rows-per-program,retune-launch ../corpus/vllm/vllm

`--only ID[,ID...]` runs those rewrites alone (the whole table takes about half an hour on 900 files). The checkouts are fetched
at development time (see the corpus notes), never committed. Rewrites that need IR evidence say no here.
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext  # noqa: E402
from diagnose.rewrite.table import REWRITES  # noqa: E402


def folded(reason: str) -> str:
    """A decline's reason with the kernel names before it and the numbers and names in it folded."""
    reason = re.sub(r"^([\w-]+: )+", "", reason.splitlines()[0] if reason else "")
    reason = re.sub(r"`[^`]*`", "`…`", reason)
    reason = re.sub(r"\b[A-Z][A-Z0-9_]+\b", "NAME", reason)
    return re.sub(r"\b\d+\b", "N", reason)[:160]


def main(roots: list[str], reasons_of: tuple[str, ...] = (), only: tuple[str, ...] = ()) -> int:
    declined: dict[str, Counter] = {rewrite_id: Counter() for rewrite_id in reasons_of}
    files = [p for root in roots for p in sorted(Path(root).rglob("*.py")) if "triton" in p.read_text(errors="ignore")]
    applied: Counter = Counter()
    reached = 0  # files at least one rewrite applies to
    crashes: Counter = Counter()
    examples: dict = {}
    for path in files:
        try:
            ctx = RewriteContext(path.read_text(errors="ignore"), str(path))
        except Exception:  # noqa: BLE001 - a file libcst cannot read is not a rewrite's crash
            continue
        before = sum(applied.values())
        for rewrite_id, rewrite in REWRITES.items():
            if only and rewrite_id not in only:
                continue
            try:
                rewrite.apply(ctx)
                applied[rewrite_id] += 1
            except NotApplicable as exc:
                if rewrite_id in declined:
                    declined[rewrite_id][folded(str(exc))] += 1
            except Exception as exc:  # noqa: BLE001 - what this script counts
                where = traceback.extract_tb(exc.__traceback__)[-1]
                key = (rewrite_id, type(exc).__name__, f"{Path(where.filename).name}:{where.lineno}")
                crashes[key] += 1
                examples.setdefault(key, (path, str(exc).splitlines()[0][:150] if str(exc) else ""))
        reached += sum(applied.values()) > before
    print(f"{len(files)} files, {reached} with at least one rewrite")
    print("| rewrite | files it applies to |\n|---|---|")
    for rewrite_id, count in applied.most_common():
        print(f"| {rewrite_id} | {count} |")
    print(f"\n{sum(crashes.values())} crashes")
    for key, count in crashes.most_common():
        print(f"{count} {key} {examples[key][0]}: {examples[key][1]}")
    for rewrite_id, reasons in declined.items():
        print(f"\n{rewrite_id}: declined {sum(reasons.values())} files")
        for reason, count in reasons.most_common(10):
            print(f"{count:5d}  {reason}")
    return 1 if crashes else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--reasons", default="", help="comma-separated rewrite ids whose declines to tally")
    parser.add_argument("--only", default="", help="comma-separated rewrite ids to run (default: all)")
    args = parser.parse_args()
    ids = (tuple(filter(None, args.reasons.split(","))), tuple(filter(None, args.only.split(","))))
    unknown = sorted(set(ids[0] + ids[1]) - set(REWRITES))
    if unknown:
        parser.error(f"unknown rewrite ids: {', '.join(unknown)}")
    raise SystemExit(main(args.roots, *ids))
