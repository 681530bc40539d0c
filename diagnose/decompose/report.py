"""What `diagnose decompose` found and chose: a record per subgraph and the end-to-end verdict, and
its rendering as a Markdown table (the command prints it and writes it to `report.md`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from diagnose.decompose.choose import Candidate, Choice

NOT_TIMED = "not timed"
BASELINE_NAMES = {"compile": "torch.compile"}


@dataclass(frozen=True)
class SubgraphReport:
    """One subgraph: its ops, its inputs' and output's shapes, its candidates and the choice."""

    name: str
    ops: str
    inputs: str
    output: str
    candidates: tuple[Candidate, ...]
    choice: Choice


@dataclass(frozen=True)
class EndToEnd:
    """The composite against the whole `Model`: `passed` None when there was nothing to verify.
    `speedups`: (baseline, speedup) for each baseline the verdict timed (`eager`, `compile`), the
    geometric mean over its input groups; empty when nothing was timed (CPU, an all-torch composite)."""

    passed: bool | None
    detail: str
    speedups: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Fusion:
    """One fused pair tried: its name, the chosen time of the two it would replace added, its own chosen
    time (None when not timed or no candidate verified), and whether it was taken."""

    name: str
    before_ms: float | None
    after_ms: float | None
    taken: bool


@dataclass(frozen=True)
class Split:
    """One subgraph cut after its anchor (`search.split_swapped`): its name, its two parts', what the
    epilogue chose, and whether the cut was kept (the epilogue chose a Triton candidate)."""

    name: str
    head: str
    tail: str
    tail_choice: str
    taken: bool


@dataclass(frozen=True)
class DecomposeReport:
    model: Path
    folder: Path
    composite: Path
    subgraphs: tuple[SubgraphReport, ...]
    end_to_end: EndToEnd
    # Files of `--kernels` named for no subgraph (a name from another model, or a typo).
    unused_kernels: tuple[str, ...] = ()
    # Pairs of neighbouring subgraphs the search tried to fuse (`search.py`), in the order tried.
    fusions: tuple[Fusion, ...] = ()
    # Subgraphs whose kernels failed or trailed, cut after their anchor (`search.py`), in order.
    splits: tuple[Split, ...] = ()


def ms(value: float | None) -> str:
    return f"{value:.3g} ms" if value is not None else NOT_TIMED


def verdict_text(candidate: Candidate) -> str:
    if candidate.status == "unavailable":
        return f"{candidate.name}: unavailable"
    time = f"{candidate.time_ms:.3g} ms" if candidate.time_ms is not None else NOT_TIMED
    return f"{candidate.name}: {candidate.status}, {time}"


def markdown(report: DecomposeReport) -> str:
    """The report as Markdown: one table row per subgraph, then the end-to-end verdict."""
    lines = [
        f"# diagnose decompose: {report.model.name}",
        "",
        f"{len(report.subgraphs)} subgraphs, task files in `{report.folder}`; "
        f"composite: `{report.composite.name}` (swap an implementation in its `CHOICES`).",
        "",
        "| subgraph | ops | inputs -> output | candidates | chosen | why |",
        "|---|---|---|---|---|---|",
    ]
    for sg in report.subgraphs:
        tried = "<br>".join(verdict_text(c) for c in sg.candidates)
        lines.append(
            f"| {sg.name} | {sg.ops} | {sg.inputs} -> {sg.output} | {tried} | {sg.choice.name} | {sg.choice.why} |"
        )
    failed = [(sg.name, c.name, c.note) for sg in report.subgraphs for c in sg.candidates if c.status == "failed"]
    if failed:
        lines += ["", "Rejected candidates:", *(f"- {name} ({kind}): {note}" for name, kind, note in failed)]
    missing = [(sg.name, c.name, c.note) for sg in report.subgraphs for c in sg.candidates if c.status == "unavailable"]
    if missing:
        lines += ["", "Candidates not made:", *(f"- {name} ({kind}): {note}" for name, kind, note in missing)]
    times = [next((c.time_ms for c in sg.candidates if c.name == sg.choice.name), None) for sg in report.subgraphs]
    if times and all(t is not None for t in times):
        total = sum(times)
        lines += [
            "",
            f"Time of the chosen implementations: {total:.3g} ms in all; "
            + ", ".join(f"{sg.name} {t / total:.0%}" for sg, t in zip(report.subgraphs, times)),
        ]
    if report.fusions:
        lines += [
            "",
            "Fusions tried (two neighbours as one subgraph, taken where faster than both):",
            *(
                f"- {f.name}: {ms(f.before_ms)} as two, {ms(f.after_ms)} fused: {'taken' if f.taken else 'not taken'}"
                for f in report.fusions
            ),
        ]
    if report.splits:
        lines += [
            "",
            "Splits tried (a subgraph whose kernels failed or trailed, cut after its first op):",
            *(
                f"- {c.name} -> {c.head} + {c.tail}: the epilogue chose {c.tail_choice}: "
                + ("taken" if c.taken else "not taken")
                for c in report.splits
            ),
        ]
    if report.unused_kernels:
        lines += ["", f"Kernel files named for no subgraph (not used): {', '.join(report.unused_kernels)}"]
    verdict = {True: "PASSED", False: "FAILED", None: "torch only, nothing to verify"}[report.end_to_end.passed]
    timed = ", ".join(f"{x:.2f}x over {BASELINE_NAMES.get(b, b)}" for b, x in report.end_to_end.speedups)
    lines += [
        "",
        f"End to end (composite vs Model): {verdict}: {report.end_to_end.detail}" + (f"; {timed}" if timed else ""),
    ]
    return "\n".join(lines) + "\n"
