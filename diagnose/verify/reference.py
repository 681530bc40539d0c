"""The reference side of a verification, computed once and shared by every candidate of one task.

`prepared(task, options, where)` runs the reference job in a fresh job folder and yields a `Reference`:
the job's result, the reference outputs held in this process (`diagnose/verify/judge.py`: their files
are gone before any candidate runs) and the vault holding what the jobs read (every case's inputs and
the re-check's change, the init inputs and the model state, `diagnose/verify/vault.py`: none of it is
left on disk, and a job gets each file only when it asks for it). `verify(..., reference=...)` of
another candidate of the same task, device, groups and seeds skips the reference job; a reference file
that was edited since makes it run again (`serves`). The folder and the vault go on exit.

An optimize run or a launch-config search verifies many candidates of one task: each one's reference
job (a fresh worker drawing every case's inputs and running `Model` on them) was the same work again.

`KeptReference` holds one prepared reference across the verifications of a whole run (the agent's
baseline and every round of candidates) and prepares it again only when it no longer serves; `close()`
deletes its folder. On the H200 the reference job took 12-144 s of a run's 360 s wall, once per round.
"""

from __future__ import annotations

import secrets
import tempfile
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from diagnose.errors import UsageError
from diagnose.runtime.devices import Placement
from diagnose.task import Task
from diagnose.verify.judge import Held, take_references
from diagnose.verify.options import CheckOptions, placement_for, run_job
from diagnose.verify.vault import INIT_INPUTS, STATE, Vault


def stamp(path: str | Path) -> tuple[str, int, int]:
    info = Path(path).stat()
    return str(path), info.st_size, info.st_mtime_ns


def identity(task: Task, options: CheckOptions) -> tuple:
    """What a reference's result depends on: the reference file as it is now, and what is drawn."""
    return (
        stamp(task.reference_path.resolve()),
        options.device,
        options.groups,
        options.seeds,
        options.recheck_seed,
        options.unseen_shapes,
        options.recipes,
    )


@dataclass(frozen=True)
class Reference:
    job_dir: str
    identity: tuple
    value: dict  # the reference job's result; its cases name their files in the vault, not on disk
    held: Held
    vault: Vault = field(compare=False, repr=False)
    # Each baseline's timings and notes by what they depend on (`baseline_keys`): timed once, in a
    # process with no candidate in it, for every candidate verified against this reference.
    baseline_timings: dict = field(default_factory=dict, compare=False, repr=False)
    # Held while they are timed: candidates verified at once (`diagnose/verify/rounds.py`) wait for one
    # baseline job instead of each starting its own.
    baseline_lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def serves(self, task: Task, options: CheckOptions) -> bool:
        return identity(task, options) == self.identity

    @property
    def cases(self) -> list[dict]:
        """The judged cases: every group at every seed, then the groups at unseen shapes."""
        return [c for c in self.value["cases"] if c["role"] != "recheck"]

    def inputs_of(self, seed: int) -> dict[str, str]:
        """The inputs of each group's case for `seed` (their names in the vault), by group: what a timing
        job times on."""
        return {c["group"]: c["inputs"] for c in self.cases if c["seed"] == seed and c["role"] == "check"}

    def baseline_keys(self, options: CheckOptions) -> dict[str, tuple]:
        """What each baseline's timings depend on besides the reference, by variant: the initial kernel's
        on its file as it is now, every one on the seed timed on."""
        keys = {name: (name, options.seeds[0]) for name in options.baselines}
        if options.initial:
            keys = {"initial": ("initial", stamp(options.initial), options.seeds[0]), **keys}
        return keys

    def run_job(
        self,
        name: str,
        payload: dict,
        files: list[str],
        options: CheckOptions,
        where: Placement,
        refused: list[str] | None = None,
    ):
        """Run the worker entry `name` with a vault ticket for `files`, the files it fetches; the requests
        the vault refused it go into `refused` when given (`anticheat.inputs_in_turn`)."""
        with self.vault.ticket(files) as ticket:
            result = run_job(name, {**payload, **ticket.payload}, options, where)
        if refused is not None:
            refused += ticket.refused
        return result

    @property
    def spare(self) -> dict:
        return next(c for c in self.value["cases"] if c["role"] == "recheck")


@contextmanager
def prepared(
    task: Task, options: CheckOptions, where: Placement | None = None, clock: Callable | None = None
) -> Iterator[Reference]:
    """Run the reference job for `task` and hold its outputs; `clock(name)` times the step when given."""
    where = where or placement_for(options)
    with tempfile.TemporaryDirectory(prefix="diagnose-check-") as job:
        payload = {
            "device": options.device,
            "job_dir": job,
            "reference": str(task.reference_path),
            "groups": list(options.groups) if options.groups else None,
            "seeds": list(options.seeds),
            "recheck_seed": options.recheck_seed,
            "unseen_shapes": options.unseen_shapes,
            "recipes": options.recipes,
            # Seeds are public (the verdict names them); the salt is not: a candidate cannot
            # regenerate its cases' inputs from the seeds and precompute the answers.
            "salt": secrets.randbits(62),
            "device_lock": options.device_lock,
        }
        before = identity(task, options)
        if clock is None:
            ref = run_job("reference_job", payload, options, where)
        else:
            with clock("reference"):
                ref = run_job("reference_job", payload, options, where)
        if not ref.ok:
            raise UsageError(f"{task.reference_path}: the reference failed: {ref.failure.message}")
        held = take_references(ref.value["cases"])
        vault = Vault(Path(job), [INIT_INPUTS, STATE, *named_in_vault(ref.value["cases"])])
        try:
            yield Reference(job, before, ref.value, held, vault)
        finally:
            vault.close()


def named_in_vault(cases: list[dict]) -> list[str]:
    """The files the cases name (their inputs, the re-check's change), each now by its name alone: the
    name a job fetches it by from the vault."""
    names = []
    for case in cases:
        for role in ("inputs", "perturbation"):
            if role in case:
                case[role] = Path(case[role]).name
                names.append(case[role])
    return names


class KeptReference:
    """One prepared reference kept between verifications (a run's), replaced when it stops serving."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._held: Reference | None = None

    def serving(self, task: Task, options: CheckOptions) -> Reference | None:
        """The kept reference when it serves `task` with `options`, else None."""
        held = self._held
        return held if held is not None and held.serves(task, options) else None

    def prepare(
        self, task: Task, options: CheckOptions, where: Placement | None = None, clock: Callable | None = None
    ) -> Reference:
        """Run the reference job for `task` (the kept one is deleted first) and keep its result."""
        self.close()
        self._held = self._stack.enter_context(prepared(task, options, where, clock))
        return self._held

    def close(self) -> None:
        self._stack.close()
        self._held = None
