"""Which implementation of a subgraph the composite calls: the one policy, in one function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Prefer = Literal["torch", "triton"]


@dataclass(frozen=True)
class Candidate:
    """One implementation of a subgraph: `torch` (the subgraph as it is) or `triton` (the user's).

    `status`: `reference` (the torch ops themselves: nothing to verify), `passed` or `failed` (the
    harness's verdict against the subgraph's task). `time_ms`: the median on a device, None when not
    timed (on CPU nothing is)."""

    name: str
    path: str
    status: Literal["reference", "passed", "failed"]
    time_ms: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Choice:
    """The implementation chosen and why, in words for the report."""

    name: str
    why: str


def choose(candidates: tuple[Candidate, ...], prefer: Prefer = "torch") -> Choice:
    """Pick one implementation of a subgraph.

    Torch unless a Triton candidate passed verification and either both were timed and it is faster,
    or nothing was timed (the CPU interpreter) and the user asked `--prefer triton`. Choosing torch
    over a Triton candidate is a Swap: the PyTorch ops go back where the subkernel failed or trails.
    """
    torch = next(c for c in candidates if c.name == "torch")
    triton = next((c for c in candidates if c.name == "triton"), None)
    if triton is None:
        return Choice("torch", "no Triton candidate (no kernel file for this subgraph)")
    if triton.status != "passed":
        return Choice("torch", f"Swap: the Triton candidate failed verification ({triton.note})")
    if triton.time_ms is not None and torch.time_ms is not None:
        if triton.time_ms < torch.time_ms:
            return Choice("triton", f"verified and faster ({triton.time_ms:.3g} ms vs {torch.time_ms:.3g} ms)")
        return Choice("torch", f"Swap: the Triton candidate is slower ({triton.time_ms:.3g} ms vs "
                               f"{torch.time_ms:.3g} ms)")
    if prefer == "triton":
        return Choice("triton", "verified; not timed, chosen as asked (--prefer triton)")
    return Choice("torch", "the Triton candidate verified but nothing was timed: torch kept "
                           "(--prefer triton to choose it)")
