"""The agent's typed state and its per-run context.

State travels through the LangGraph checkpointer, so it holds only JSON-ready values: records as
dicts (`Finding.to_dict()`, `Evidence.to_dict()`, ...). Lists that grow over a run use an appending
reducer; everything else is replaced by the node that owns it.

The dicts become records at two boundaries only: the policy scores a result through
`diagnose/report/scores.py` on its `Candidate` and `Verdict` (`policy.score`), and the finished run's
state becomes its `Report` in `diagnose/agent/run.py:report_from_state` (`diagnose.records`'
`*_from_dict`), from which every rendering is made.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

LEVELS = ("triage", "profile", "ir", "passes")
# How a propose step's trace line names the searches that kept the source's own launch values (their
# summaries follow); a sweep row's reason reads them back (`diagnose/bench/optimize.py`).
KEPT = "searched, the current values kept: "


class State(TypedDict, total=False):
    task: str  # the original task file
    target: str
    device: str
    base: str  # the file rewrites apply to: the original or the best candidate
    level: int  # deepest level reached (index into LEVELS), -1 before triage
    findings: Annotated[list[dict], operator.add]
    evidence: Annotated[list[dict], operator.add]
    trace: Annotated[list[dict], operator.add]
    results: Annotated[list[dict], operator.add]  # {"candidate": ..., "verdict": ..., "path": ...}
    tried: Annotated[list[str], operator.add]  # candidate ids already proposed
    pending: list[dict]  # candidates proposed and not yet verified
    baseline: dict  # verdict of the task as given
    roofline: dict  # {"bound_ms", "group" (the farthest), "bounds_ms"} when known
    best: str | None  # id of the best verified candidate
    started: float
    next: str  # the decision of `decide`, read by its router


@dataclass(frozen=True)
class Budget:
    """What one run may spend: candidates verified, wall time, and how thorough each verification is.

    `seeds` input sets per group in every verification of the run (the baseline's and each candidate's);
    `compile_baseline` times `torch.compile` beside the task as given. Both trade evidence for wall
    time: on a device shared by a sweep's `--jobs`, three seeds of GiB inputs and a compile of every
    reference can use a whole run's wall budget before its first candidate.
    """

    max_candidates: int = 12
    max_wall_s: float = 1800.0
    roofline_fraction: float = 0.9  # stop once the best reaches this fraction of the bound
    seeds: int = 3
    compile_baseline: bool = True


@dataclass(frozen=True)
class Context:
    """What a run needs that is not state: where it lives, its budget, and the tools the nodes call."""

    run_dir: str
    budget: Budget = Budget()
    tools: Any = field(default=None)
