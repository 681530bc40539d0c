"""Triage's precision on real code: labelled findings from real repositories, re-judged by the rules as they are now.

    python benchmarks/triage_precision.py --corpus ../corpus [--labels benchmarks/triage_precision] \
        [--target cuda:sm90 --target ascend:910b] [--code TRI007 ...] [--out report.md]

`--labels` may be given several times (the first set, `heldout`, `heldout2`): the table is then over
all their rows together.

`--corpus` holds one checkout per repository, named as the labels name them (`liger`, `flaggems`,
`tritonbench`, `triton-tutorials`); nothing of theirs is committed here. The labels are CSV files in
`--labels` (one per rule, `<CODE>.csv`), one row per finding read against the code::

    repo,commit,path,line,code,target,label,reason
    liger,ead96b61...,src/liger_kernel/ops/rms_norm.py,120,TRI007,cuda:sm90,false,the second pass is the backward's ...

`label` is `true` (the finding is right and worth acting on), `false` (wrong: the code does not do
what the message says, or doing what it suggests would be wrong) or `debatable` (right about the
code, doubtful as advice). A labelled finding the rules no longer produce is reported as gone: a
false one gone is a fixed false positive, a true one gone is a lost true positive.

Per rule it prints: labelled findings, how many the rules still produce, true / false / debatable
among those, precision = true / (true + false) over those still produced, and the gone ones. Then,
per repository and target, kernel files, findings and findings per file over the whole corpus (every
file with a `@triton.jit`, tests excluded), with the error-severity count.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnose.triage import triage_source  # noqa: E402

LABELS = ROOT / "benchmarks" / "triage_precision"
TARGETS = ("cuda:sm90", "ascend:910b")
COLUMNS = ("repo", "commit", "path", "line", "code", "target", "label", "reason")


@dataclass(frozen=True)
class Label:
    repo: str
    commit: str
    path: str
    line: int
    code: str
    target: str
    label: str
    reason: str


def read_labels(folder: Path) -> list[Label]:
    out = []
    for file in sorted(folder.glob("*.csv")):
        with file.open(newline="") as f:
            for row in csv.DictReader(f):
                if row["label"] not in ("true", "false", "debatable"):
                    raise SystemExit(f"{file}: label must be true, false or debatable: {row}")
                out.append(Label(**{**{k: row[k].strip() for k in COLUMNS}, "line": int(row["line"])}))
    return out


def kernel_files(repo: Path) -> list[Path]:
    """Every .py file with a `@triton.jit` or `@jit`, outside test folders."""
    out = []
    for path in sorted(repo.rglob("*.py")):
        if any(part in ("test", "tests") or part.startswith("test_") for part in path.relative_to(repo).parts):
            continue
        text = path.read_text(errors="replace")
        if "triton.jit" in text or "@jit" in text:
            out.append(path)
    return out


class Triage:
    """Findings per (file, target), computed once."""

    def __init__(self):
        self.cache: dict[tuple[Path, str], list] = {}

    def __call__(self, path: Path, target: str) -> list:
        key = (path, target)
        if key not in self.cache:
            self.cache[key] = triage_source(path.read_text(errors="replace"), str(path), target)
        return self.cache[key]


def precision_table(labels: list[Label], corpus: Path, triage: Triage, codes: set[str] | None) -> list[str]:
    by_code: dict[str, Counter] = defaultdict(Counter)
    missing = []
    for label in labels:
        if codes and label.code not in codes:
            continue
        path = corpus / label.repo / label.path
        if not path.exists():
            missing.append(f"{label.repo}/{label.path}")
            continue
        found = any(
            f.code == label.code and f.location and f.location.line == label.line for f in triage(path, label.target)
        )
        count = by_code[label.code]
        count["labelled"] += 1
        count[f"{label.label}:{'found' if found else 'gone'}"] += 1
    lines = [
        "| rule | labelled | still found | true | false | debatable | precision | false gone (fixed) | true gone (lost) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for code in sorted(by_code):
        c = by_code[code]
        t, f, d = c["true:found"], c["false:found"], c["debatable:found"]
        precision = f"{t / (t + f):.0%}" if t + f else "-"
        lines.append(
            f"| {code} | {c['labelled']} | {t + f + d} | {t} | {f} | {d} | {precision} | "
            f"{c['false:gone']} | {c['true:gone']} |"
        )
    if missing:
        lines += ["", f"{len(missing)} labelled files are not in the corpus: {', '.join(sorted(set(missing))[:5])} ..."]
    return lines


def volume_table(corpus: Path, repos: list[str], targets: list[str], triage: Triage) -> list[str]:
    lines = [
        "| repository | target | kernel files | findings | per file | errors | most frequent |",
        "|---|---|---|---|---|---|---|",
    ]
    for repo in repos:
        files = kernel_files(corpus / repo)
        for target in targets:
            findings = [f for path in files for f in triage(path, target)]
            codes = Counter(f.code for f in findings)
            errors = sum(f.severity == "error" for f in findings)
            top = ", ".join(f"{c} {n}" for c, n in codes.most_common(4))
            lines.append(
                f"| {repo} | {target} | {len(files)} | {len(findings)} | "
                f"{len(findings) / max(len(files), 1):.2f} | {errors} | {top} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="folder with one checkout per repository")
    parser.add_argument(
        "--labels",
        type=Path,
        action="append",
        help=f"a folder of <CODE>.csv labels; repeat to combine sets (default: {LABELS.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--target", action="append", help=f"targets of the volume table (default: {', '.join(TARGETS)})"
    )
    parser.add_argument("--code", action="append", help="only these rules in the precision table")
    parser.add_argument("--no-volume", action="store_true", help="skip the per-repository volume table")
    parser.add_argument("--out", type=Path, help="also write the tables here (Markdown)")
    args = parser.parse_args()
    labels = [label for folder in args.labels or [LABELS] for label in read_labels(folder)]
    triage = Triage()
    out = ["## Precision on labelled real findings", ""]
    out += precision_table(labels, args.corpus, triage, set(args.code) if args.code else None)
    commits = sorted({(label.repo, label.commit) for label in labels})
    out += ["", "Checkouts labelled: " + ", ".join(f"{r} {c[:12]}" for r, c in commits)]
    if not args.no_volume:
        repos = sorted(p.name for p in args.corpus.iterdir() if p.is_dir())
        out += ["", "## Findings on the whole corpus", ""]
        out += volume_table(args.corpus, repos, args.target or list(TARGETS), triage)
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
