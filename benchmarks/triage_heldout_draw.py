"""Draw unlabelled triage findings on the real corpus for a new held-out label set (issue 27).

    python benchmarks/triage_heldout_draw.py --corpus /work/corpus --seed 2027 --want 20 \
        --labels benchmarks/triage_precision --labels benchmarks/triage_precision/heldout > draw.csv

Runs triage over every kernel file (`kernel_files` of `triage_precision.py`) for both targets. For each rule
that fires at least `--want` times, counts the labelled findings (rows of any `--labels` folder) the rules still
produce; for a rule short of `--want`, draws that many more among its unlabelled findings: sorted by
(repo, path, line, target), shuffled with `random.Random(seed)` (a fresh generator per rule), then taken
round-robin across repositories (repository order from the same generator), at most 2 per file; where the
cap leaves the rule short (few files), the rest in the shuffled order, cap lifted. Prints the
drawn rows in the label CSV format with `label` and `reason` left empty, to be read against the code.
"""

from __future__ import annotations

import argparse
import csv
import random
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from triage_precision import COLUMNS, TARGETS, Triage, kernel_files, read_labels  # noqa: E402


def draw(candidates: list[tuple], need: int, seed: int) -> list[tuple]:
    """`need` of `candidates` (repo, path, line, target) as the module docstring says."""
    rng = random.Random(seed)
    pool = sorted(candidates)
    rng.shuffle(pool)
    by_repo: dict[str, list[tuple]] = defaultdict(list)
    for c in pool:
        by_repo[c[0]].append(c)
    repos = sorted(by_repo)
    rng.shuffle(repos)
    per_file: Counter = Counter()
    out: list[tuple] = []
    while len(out) < need and any(by_repo.values()):
        for repo in repos:
            while by_repo[repo]:
                c = by_repo[repo].pop(0)
                if per_file[c[:2]] < 2:
                    per_file[c[:2]] += 1
                    out.append(c)
                    break
            if len(out) == need:
                break
    # Files at their cap hold the rest: take them in the shuffled order rather than fall short.
    rest = [c for c in pool if c not in out]
    return out + rest[: need - len(out)]


def commit_of(checkout: Path, labels: list) -> str:
    """The checkout's git HEAD, else the commit the labels give for that repository (the corpus may be a plain copy)."""
    try:
        return subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        known = {lb.commit for lb in labels if lb.repo == checkout.name}
        return known.pop() if len(known) == 1 else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--labels", type=Path, action="append", required=True)
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--want", type=int, default=20)
    args = parser.parse_args()
    labels = [lb for folder in args.labels for lb in read_labels(folder)]
    labelled = {(lb.repo, lb.path, lb.line, lb.code, lb.target) for lb in labels}
    triage = Triage()
    found: dict[str, set[tuple]] = defaultdict(set)
    repos = sorted(p.name for p in args.corpus.iterdir() if p.is_dir())
    for repo in repos:
        for path in kernel_files(args.corpus / repo):
            rel = str(path.relative_to(args.corpus / repo))
            for target in TARGETS:
                for f in triage(path, target):
                    if f.location:
                        found[f.code].add((repo, rel, f.location.line, target))
    commits = {repo: commit_of(args.corpus / repo, labels) for repo in repos}
    writer = csv.writer(sys.stdout)
    writer.writerow(COLUMNS)
    for code in sorted(found):
        current = {k for k in found[code] if (*k[:3], code, k[3]) in labelled}
        need = args.want - len(current)
        print(f"{code}: {len(found[code])} found, {len(current)} labelled", file=sys.stderr)
        if len(found[code]) < args.want or need <= 0:
            continue
        for repo, rel, line, target in draw(sorted(found[code] - current), need, args.seed):
            writer.writerow((repo, commits[repo], rel, line, code, target, "", ""))


if __name__ == "__main__":
    main()
