"""How a verification is run (`CheckOptions`) and how its jobs are started (`run_job`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from diagnose.runtime.runner import call
from diagnose.errors import UsageError
from diagnose.runtime.devices import Placement
from diagnose.toolchain.placement import require

JOBS = "diagnose.verify.jobs"
TIMING_JOBS = "diagnose.verify.timing_jobs"


@dataclass(frozen=True)
class CheckOptions:
    """How to verify: where, how many seeds and which groups, limits, and what to time against."""

    device: str = "cpu"
    seeds: tuple[int, ...] = (0, 1, 2)
    groups: tuple[str, ...] | None = None
    timeout_s: float = 600.0
    memory_limit: int = 16 * 2**30
    soak: int = 20  # calls at most where nothing is timed: past 3 it stops after 1 s (`jobs.SOAK_S`)
    baselines: tuple[str, ...] = ("eager", "compile")
    initial: Path | None = None
    recheck_seed: int = 1009
    # Each input group also checked once at sizes the task did not name (`diagnose.verify.shapes`).
    unseen_shapes: bool = True
    # Later jobs draw a case's inputs again from its recipe where the draw reproduces, instead of reading
    # files of them (`diagnose.verify.recipes`); False: files always.
    recipes: bool = True
    # Where the jobs run (interpreter, environment); None: where `device` runs here (`require`).
    placement: Placement | None = None
    # (dtype name, (atol, rtol)) pairs that replace the default table's (a suite's own tolerances).
    tolerances: tuple[tuple[str, tuple[float, float]], ...] = ()
    # A lock file shared with other workers timing on the same device (`diagnose.runtime.device_lock`).
    device_lock: str | None = None
    # Called with each step's name as it starts (`harness.PHASES`): a command line's progress. Not part
    # of what is verified, so two options that differ only here are equal.
    on_phase: Callable[[str], None] | None = field(default=None, compare=False, repr=False)


def run_job(name: str, payload: dict, options: CheckOptions, where: Placement):
    """Run the worker entry `name` of `jobs.py`, or of `timing_jobs.py` when it is one of those."""
    module = TIMING_JOBS if name in ("baseline_timing_job", "timing_job", "side_by_side_job") else JOBS
    return call(
        f"{module}:{name}",
        payload,
        timeout_s=options.timeout_s,
        memory_limit=options.memory_limit,
        **where.runner_options(),
    )


def placement_for(options: CheckOptions) -> Placement:
    """Where the jobs run: the options' placement, or where their device runs here."""
    where = options.placement or require(options.device)
    if where.device != options.device:
        raise UsageError(f"the jobs' placement is for device {where.device}, not {options.device}")
    return where
