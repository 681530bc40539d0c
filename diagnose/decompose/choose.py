"""Which implementation of a subgraph the composite calls: the one policy, in one function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Prefer = Literal["torch", "triton"]


@dataclass(frozen=True)
class Candidate:
    """One implementation of a subgraph: `torch` (the subgraph as it is), `triton` (the user's kernel)
    or `inductor` (the Triton kernels Inductor generates for it, `inductor.py`).

    `status`: `reference` (the torch ops themselves: nothing to verify), `passed` or `failed` (the
    harness's verdict against the subgraph's task), `unavailable` (no candidate could be made: `note`
    says why). `time_ms`: the median on a device, None when not timed (on CPU nothing is)."""

    name: str
    path: str
    status: Literal["reference", "passed", "failed", "unavailable"]
    time_ms: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Choice:
    """The implementation chosen and why, in words for the report."""

    name: str
    why: str


def choose(candidates: tuple[Candidate, ...], prefer: Prefer = "torch") -> Choice:
    """Pick one implementation of a subgraph.

    Torch unless a Triton candidate (the user's or Inductor's) passed verification and either it was
    timed and is the fastest, or nothing was timed (the CPU interpreter) and the user asked `--prefer
    triton` (then the user's kernel before Inductor's: it was written for this). Choosing torch over a
    Triton candidate is a Swap: the PyTorch ops go back where the subkernels failed or trail.
    """
    torch = next(c for c in candidates if c.name == "torch")
    tritons = [c for c in candidates if c.name != "torch" and c.status != "unavailable"]
    if not tritons:
        return Choice("torch", "no Triton candidate (no kernel file, no Inductor kernel for this subgraph)")
    passed = [c for c in tritons if c.status == "passed"]
    if not passed:
        failed = "; ".join(f"{c.name}: {c.note}" for c in tritons)
        return Choice("torch", f"Swap: every Triton candidate failed verification ({failed})")
    timed = [c for c in passed if c.time_ms is not None]
    if timed and torch.time_ms is not None:
        best = min(timed, key=lambda c: c.time_ms)
        if best.time_ms < torch.time_ms:
            return Choice(best.name, f"verified and faster ({best.time_ms:.3g} ms vs {torch.time_ms:.3g} ms)")
        return Choice(
            "torch",
            f"Swap: the fastest Triton candidate ({best.name}) is slower "
            f"({best.time_ms:.3g} ms vs {torch.time_ms:.3g} ms)",
        )
    if prefer == "triton":
        return Choice(passed[0].name, "verified; not timed, chosen as asked (--prefer triton)")
    return Choice(
        "torch",
        f"the {passed[0].name} candidate verified but nothing was timed: torch kept (--prefer triton to choose it)",
    )
