"""The search over the decomposition: neighbouring subgraphs fused where a fused candidate verifies and wins.

After every subgraph has its choice, each pair of neighbours that can be one subgraph (`partition.fuse`:
the second reads the first's output and nothing else does) becomes a subgraph of its own, with its task
file, its candidates verified and timed like any other's (`evaluate`: on a device, Inductor's kernels
for the pair, which fuse across the cut: a conv's epilogue into the norm that follows). A pair is fused
where its chosen implementation's time is under the sum of the two it replaces. Pairs are taken largest
gain first, never two sharing a subgraph; rounds repeat on the result (a fused pair may fuse with its next
neighbour) until no pair wins or `budget` fused candidates have been tried. Where nothing was timed (the
CPU interpreter) no pair can win, so none is tried.

Splitting is the partition's own (`partition.split`): each group is cut down to one output before any
candidate is made; Swap (`choose.py`) puts torch back where a subgraph's kernels fail or trail.
"""

from __future__ import annotations

from typing import Callable

from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.partition import Subgraph, fuse
from diagnose.decompose.report import Fusion, SubgraphReport

# Candidates (a verified, timed row per fused subgraph) for a list of fused subgraphs.
Evaluate = Callable[[list[Subgraph]], list[SubgraphReport]]


def chosen_ms(row: SubgraphReport) -> float | None:
    """The time of the implementation a row chose, None when it was not timed."""
    return next((c.time_ms for c in row.candidates if c.name == row.choice.name), None)


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
            if (fused := fuse(subgraphs[i], subgraphs[i + 1], records)) is not None
            and fused.name not in seen
            and chosen_ms(rows[i]) is not None
            and chosen_ms(rows[i + 1]) is not None
        ]
        pairs = pairs[: budget - len(tried)]
        if not pairs:
            break
        seen |= {fused.name for _, fused in pairs}
        wins = []
        for (i, fused), row in zip(pairs, evaluate([fused for _, fused in pairs])):
            before, after = chosen_ms(rows[i]) + chosen_ms(rows[i + 1]), chosen_ms(row)
            won = after is not None and row.choice.name != "torch" and after < before
            tried.append(Fusion(fused.name, before, after, False))
            if won:
                wins.append((before - after, i, fused, row, len(tried) - 1))
        taken: set[int] = set()
        for _, i, fused, row, at in sorted(wins, key=lambda w: -w[0]):
            if i in taken or i + 1 in taken:
                continue
            taken |= {i, i + 1}
            tried[at] = Fusion(fused.name, tried[at].before_ms, tried[at].after_ms, True)
            subgraphs[i], rows[i] = fused, row
            subgraphs[i + 1] = rows[i + 1] = None  # type: ignore[call-overload]
        if not taken:
            break
        subgraphs = [s for s in subgraphs if s is not None]
        rows = [r for r in rows if r is not None]
    return subgraphs, rows, tried
