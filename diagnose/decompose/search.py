"""The search over the decomposition: neighbouring subgraphs fused where a fused candidate verifies and wins.

After every subgraph has its choice, each pair of neighbours that can be one subgraph (`recut.fuse`:
the second reads the first's output and nothing else does) becomes a subgraph of its own, with its task
file, its candidates verified and timed like any other's (`evaluate`: on a device, Inductor's kernels
for the pair, which fuse across the cut: a conv's epilogue into the norm that follows). A pair is fused
where its chosen implementation is faster than the two it replaces as they were chosen: that time is the
fused task's own torch time (both parts in torch, measured in the same run as the fused candidate), with
each part that chose a Triton candidate counted at that candidate's time instead of its torch time (both
from that part's run). So a part with no candidate of its own (a lone conv: Inductor gives no Triton
kernel for it, and nothing times it alone) still fuses with its neighbour. Pairs are taken largest gain
first, never two sharing a subgraph; rounds repeat on the result (a fused pair may fuse with its next
neighbour) until no pair wins or `budget` fused candidates have been tried, the heaviest pairs (by the
time of the two parts as chosen) first. Where nothing is timed (the
CPU interpreter) no pair can win: the command gives no budget there.

Then each subgraph that kept torch because its Triton candidates failed or trailed is cut after its
anchor (`recut.split_head`, `split_swapped`): the epilogue alone gets candidates of its own. An Inductor
conv whose TF32 result is 1.7e-4 off cuDNN's fails a conv -> ReLU -> bias-add subgraph; its ReLU and
bias add alone are exact, and one Triton kernel for the two beats torch's two. The cut is kept where the
epilogue chose a Triton candidate (verified, and faster where timed), the anchor staying in torch.
Swap (`choose.py`) puts torch back where a subgraph's kernels fail or trail.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.partition import Subgraph
from diagnose.decompose.recut import fuse, split_head
from diagnose.decompose.report import Fusion, Split, SubgraphReport

# Candidates (a verified, timed row per fused subgraph) for a list of fused subgraphs.
Evaluate = Callable[[list[Subgraph]], list[SubgraphReport]]


def chosen_ms(row: SubgraphReport, name: str | None = None) -> float | None:
    """The time of the implementation a row chose (or of candidate `name`), None when it was not timed."""
    return next((c.time_ms for c in row.candidates if c.name == (name or row.choice.name)), None)


def replaced_ms(first: SubgraphReport, second: SubgraphReport, fused: SubgraphReport) -> float | None:
    """What the two parts take as chosen, from the fused task's torch time (None where a time is missing)."""
    total = chosen_ms(fused, "torch")
    for part in (first, second):
        if total is None or part.choice.name == "torch":
            continue
        chosen, torch = chosen_ms(part), chosen_ms(part, "torch")
        total = total + chosen - torch if chosen is not None and torch is not None else None
    return total


def search(
    subgraphs: list[Subgraph],
    rows: list[SubgraphReport],
    records: tuple[NodeRecord, ...],
    evaluate: Evaluate,
    budget: int,
) -> tuple[list[Subgraph], list[SubgraphReport], list[Fusion]]:
    """The subgraphs and their rows after fusing the pairs that win, and every pair tried."""
    subgraphs, rows, tried, seen = list(subgraphs), list(rows), [], set()
    while len(tried) < budget:
        pairs = [
            (i, fused)
            for i in range(len(subgraphs) - 1)
            if (fused := fuse(subgraphs[i], subgraphs[i + 1], records)) is not None and fused.name not in seen
        ]
        # the heaviest pairs first, where a fusion can gain most; a part timed by nothing alone (a lone conv
        # or linear: no candidate of its own) counts as heavy
        pairs.sort(key=lambda pair: -sum(t if (t := chosen_ms(r)) is not None else float("inf")
                                         for r in rows[pair[0]: pair[0] + 2]))  # fmt: skip
        pairs = pairs[: budget - len(tried)]
        if not pairs:
            break
        seen |= {fused.name for _, fused in pairs}
        wins = []
        for (i, fused), row in zip(pairs, evaluate([fused for _, fused in pairs])):
            before, after = replaced_ms(rows[i], rows[i + 1], row), chosen_ms(row)
            won = before is not None and after is not None and row.choice.name != "torch" and after < before
            tried.append(Fusion(fused.name, before, after, False))
            if won:
                wins.append((before - after, i, fused, row, len(tried) - 1))
        merged: dict[int, tuple[Subgraph, SubgraphReport]] = {}  # first part's index -> the pair as one
        for _, i, fused, row, at in sorted(wins, key=lambda w: -w[0]):
            if not {i - 1, i, i + 1} & merged.keys():
                merged[i] = fused, row
                tried[at] = replace(tried[at], taken=True)
        if not merged:
            break
        kept = [j for j in range(len(subgraphs)) if j - 1 not in merged]
        subgraphs = [merged[j][0] if j in merged else subgraphs[j] for j in kept]
        rows = [merged[j][1] if j in merged else rows[j] for j in kept]
    return subgraphs, rows, tried


def swapped(row: SubgraphReport) -> bool:
    """Whether torch was kept over a Triton candidate that failed, or that verified and was slower."""
    if row.choice.name != "torch":
        return False
    torch = chosen_ms(row, "torch")
    return any(
        c.status == "failed" or (c.status == "passed" and None not in (c.time_ms, torch) and c.time_ms >= torch)
        for c in row.candidates
        if c.name != "torch"
    )


def split_swapped(
    subgraphs: list[Subgraph], rows: list[SubgraphReport], records: tuple[NodeRecord, ...], evaluate: Evaluate
) -> tuple[list[Subgraph], list[SubgraphReport], list[Split]]:
    """The subgraphs and their rows after cutting each swapped one (`swapped`) after its anchor where its
    epilogue then chose a Triton candidate, and every cut tried. The cuts are evaluated in one call."""
    cuts = [
        (i, parts)
        for i, (sg, row) in enumerate(zip(subgraphs, rows))
        if swapped(row) and (parts := split_head(sg, records))
    ]
    if not cuts:
        return subgraphs, rows, []
    evaluated = evaluate([part for _, parts in cuts for part in parts])
    taken: dict[int, tuple[tuple[Subgraph, Subgraph], tuple[SubgraphReport, SubgraphReport]]] = {}
    tried = []
    for k, (i, parts) in enumerate(cuts):
        head_row, tail_row = evaluated[2 * k], evaluated[2 * k + 1]
        take = tail_row.choice.name != "torch"
        tried.append(Split(subgraphs[i].name, parts[0].name, parts[1].name, tail_row.choice.name, take))
        if take:
            taken[i] = parts, (head_row, tail_row)
    out_subgraphs = [part for i, sg in enumerate(subgraphs) for part in (taken[i][0] if i in taken else (sg,))]
    out_rows = [part for i, row in enumerate(rows) for part in (taken[i][1] if i in taken else (row,))]
    return out_subgraphs, out_rows, tried
