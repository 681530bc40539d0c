"""Verifying and timing one candidate against its task: the parent side of the harness.

The flow, each step a fresh worker (`diagnose/verify/jobs.py`):

1. the reference job draws every case's inputs (several seeds x the selected input groups, plus one
   spare case for the re-check) and computes the reference outputs;
2. the candidate job runs `ModelNew` on the same inputs, its launches counted and the reference trapped;
   where nothing is timed it also soaks (repeated calls) and then runs the spare case;
3. the parent compares outputs and decides the anti-cheat checks (`diagnose/verify/anticheat.py`);
   the reference outputs were read into the parent and their files deleted before step 2, so no
   candidate process can find them on disk;
4. a correct candidate gets a ghost replay in a fresh worker;
5. on a device, the timing job times candidate and baselines and runs the spare case after timing.

Every job runs where the device's placement says (`diagnose.runtime.devices.require`): this
interpreter for `cuda` and `cpu` (interpreted), the interpreter that has torch_npu for `npu` (the
Ascend toolchain's, through `runner.call(..., python=...)`). Reference failures are the task's fault
and raise `UsageError`; candidate failures become the verdict.
"""

from __future__ import annotations

import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.records import CaseResult, CheckResult, Failure, Timing, Verdict
from diagnose.runtime import call
from diagnose.runtime.devices import Placement, require, timed
from diagnose.task import Task
from diagnose.verify import anticheat, tensors
from diagnose.verify.compare import compare_case, compare_one

JOBS = "diagnose.verify.jobs"
NOT_TIMED = "not timed: no device here (Triton interpreter on CPU)"


@dataclass(frozen=True)
class CheckOptions:
    """How to verify: where, how many seeds and which groups, limits, and what to time against."""

    device: str = "cpu"
    seeds: tuple[int, ...] = (0, 1, 2)
    groups: tuple[str, ...] | None = None
    timeout_s: float = 600.0
    memory_limit: int = 16 * 2**30
    soak: int = 20
    baselines: tuple[str, ...] = ("eager", "compile")
    initial: Path | None = None
    recheck_seed: int = 1009
    # Where the jobs run (interpreter, environment); None: where `device` runs here (`require`).
    placement: Placement | None = None
    # (dtype name, (atol, rtol)) pairs that replace the default table's (a suite's own tolerances).
    tolerances: tuple[tuple[str, tuple[float, float]], ...] = ()


def run_job(name: str, payload: dict, options: CheckOptions, where: Placement):
    return call(f"{JOBS}:{name}", payload, timeout_s=options.timeout_s, memory_limit=options.memory_limit,
                **where.runner_options())


def key(case: dict) -> tuple[str, int, str]:
    return case["group"], case["seed"], case["role"]


def take_references(cases: list[dict]) -> dict[tuple[str, int, str], tuple[list, list | None]]:
    """Read the reference outputs (and the inputs as the reference left them, where it changed one)
    into this process and delete their files, before any candidate job starts.

    A candidate runs as the same user and could read a file left on disk; what it is judged against
    lives only here. The cases lose their paths to those files, so no payload names them either.
    """
    held = {}
    for case in cases:
        outputs_file, post_file = case.pop("reference"), case.pop("reference_post_inputs", None)
        held[key(case)] = (tensors.load(outputs_file), tensors.load(post_file) if post_file else None)
        for file in (outputs_file, post_file):
            if file:
                Path(file).unlink()
    return held


def compare_held(case: dict, held: dict, outputs_file: str, options: CheckOptions) -> CaseResult:
    return compare_case(case["group"], case["seed"], held[key(case)][0], tensors.load(outputs_file),
                        dict(options.tolerances))


def differs(a: list, b: list) -> bool:
    import torch

    return len(a) != len(b) or any(x.shape != y.shape or not torch.equal(x, y) for x, y in zip(a, b))


def mutated_differently(case: dict, result: dict, reference_post: list | None) -> list[int]:
    """Inputs the candidate left differently from how the reference leaves them.

    The candidate job saves its post-call inputs only when it changed one; when neither side changed
    anything there is nothing to load.
    """
    if result.get("post_inputs") is None:
        return list(case["mutated"])
    expected = reference_post if reference_post is not None else tensors.load(case["inputs"])
    actual = tensors.load(result["post_inputs"])
    return [i for i, (e, a) in enumerate(zip(expected, actual)) if hasattr(e, "shape") and not compare_one(e, a)[0]]


@dataclass(frozen=True)
class Judged:
    """The parent's reading of the candidate's check cases."""

    cases: tuple[CaseResult, ...]
    # (label, reference outputs differ between the seeds, candidate outputs differ)
    sensitivity: tuple[tuple[str, bool, bool], ...]
    mutations: tuple[tuple[str, list[int]], ...]


def judge(cases: list[dict], results: list[dict], held: dict, options: CheckOptions) -> Judged:
    """Compare every case, pair consecutive seeds of a group and check input mutation.

    Each output file is read once and at most two of them are held at a time: outputs of the large
    groups are GiB-sized.
    """
    case_results, pairs, mutations = [], [], []
    previous = None
    for case, result in zip(cases, results):
        (refs, reference_post), outs = held[key(case)], tensors.load(result["outputs"])
        case_results.append(compare_case(case["group"], case["seed"], refs, outs, dict(options.tolerances)))
        if previous is not None and previous[0]["group"] == case["group"]:
            label = f"{case['group']} seeds {previous[0]['seed']}/{case['seed']}"
            pairs.append((label, differs(previous[1], refs), differs(previous[2], outs)))
        mutations.append((f"{case['group']}/{case['seed']}", mutated_differently(case, result, reference_post)))
        previous = (case, refs, outs)
    return Judged(tuple(case_results), tuple(pairs), tuple(mutations))


class Phases:
    """Wall seconds of each step of one verification, for the report (where does `check` spend its time)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.seconds: list[tuple[str, float]] = []

    @contextmanager
    def clock(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds.append((name, round(time.perf_counter() - start, 3)))

    def done(self) -> tuple[tuple[str, float], ...]:
        """The steps so far, then the total since the verification began."""
        return (*self.seconds, ("total", round(time.perf_counter() - self.start, 3)))


def not_timed(groups: list[str], options: CheckOptions) -> tuple[Timing, ...]:
    variants = ["candidate", *(["initial"] if options.initial else []), *options.baselines]
    return tuple(Timing(v, g, note=NOT_TIMED) for g in groups for v in variants)


def verify(task: Task, options: CheckOptions = CheckOptions()) -> Verdict:
    """Correctness, anti-cheat and (on a device) timing of the task's candidate."""
    where = options.placement or require(options.device)
    if where.device != options.device:
        raise UsageError(f"the jobs' placement is for device {where.device}, not {options.device}")
    phases = Phases()
    clock = phases.clock
    with tempfile.TemporaryDirectory(prefix="diagnose-check-") as job:
        common = {"device": options.device, "job_dir": job}
        with clock("reference"):
            ref = run_job("reference_job", {**common, "reference": str(task.reference_path),
                                            "groups": list(options.groups) if options.groups else None,
                                            "seeds": list(options.seeds), "recheck_seed": options.recheck_seed},
                          options, where)
        if not ref.ok:
            raise UsageError(f"{task.reference_path}: the reference failed: {ref.failure.message}")
        versions = tuple(sorted(ref.value["versions"].items()))
        notes = tuple(ref.value["notes"])
        held = take_references(ref.value["cases"])
        cases = [c for c in ref.value["cases"] if c["role"] == "check"]
        spare = next(c for c in ref.value["cases"] if c["role"] == "recheck")
        on_device = timed(options.device)
        with clock("candidate"):
            cand = run_job("candidate_job", {**common, "candidate": str(task.candidate_path), "mode": "check",
                                             "cases": cases + ([] if on_device else [spare]),
                                             "soak": 0 if on_device else options.soak}, options, where)
        if not cand.ok:
            return Verdict(False, options.device, failure=cand.failure, versions=versions, notes=notes,
                           phases=phases.done())
        results = [r for r in cand.value["cases"] if r["role"] == "check"]
        with clock("compare"):
            judged = judge(cases, results, held, options)
        case_results = judged.cases
        checks = [
            anticheat.launches_triton(results),
            anticheat.no_reference_call(cand.value["reference_calls"]),
            anticheat.input_sensitivity(list(judged.sensitivity)),
            anticheat.input_mutation(list(judged.mutations)),
        ]
        correct = all(c.passed for c in case_results)
        timings: tuple[Timing, ...] = not_timed(ref.value["selected"], options)
        if correct:
            with clock("ghost"):
                checks.append(ghost_check(cases[0], held, common, task, options, where))
            if on_device:
                with clock("timing"):
                    timings, timing_checks, timing_notes = time_candidate(task, ref.value, spare, held, common,
                                                                          options, where)
                checks += timing_checks
                notes += timing_notes
            else:
                after = next(r for r in cand.value["cases"] if r["role"] == "recheck")
                checks.append(anticheat.recheck_after_timing(compare_held(spare, held, after["outputs"], options),
                                                             f"soak of {options.soak} calls"))
        passed = correct and all(c.passed for c in checks)
    return Verdict(passed, options.device, case_results, tuple(checks), timings,
                   versions=versions, notes=notes, phases=phases.done())


def ghost_check(case: dict, held: dict, common: dict, task: Task, options: CheckOptions, where: Placement) -> CheckResult:
    ghost = run_job("candidate_job", {**common, "candidate": str(task.candidate_path), "mode": "ghost",
                                      "cases": [case], "soak": 0}, options, where)
    if not ghost.ok:
        return anticheat.ghost_replay(None, ghost.failure.message)
    return anticheat.ghost_replay(compare_held(case, held, ghost.value["cases"][0]["outputs"], options), None)


def time_candidate(task: Task, ref: dict, spare: dict, held: dict, common: dict, options: CheckOptions,
                   where: Placement):
    """Timings, the timing-phase checks and notes, from one timing worker."""
    result = run_job("timing_job", {**common, "reference": str(task.reference_path),
                                    "candidate": str(task.candidate_path),
                                    "initial": str(options.initial) if options.initial else None,
                                    "groups": ref["selected"], "seed": options.seeds[0],
                                    "baselines": list(options.baselines), "recheck": spare}, options, where)
    if not result.ok:
        failure: Failure = result.failure
        checks = [CheckResult("recheck_after_timing", False, f"timing run failed: {failure.kind}: {failure.message}")]
        return not_timed(ref["selected"], options), checks, ()
    timings = tuple(Timing(**t) for t in result.value["timings"])
    medians = {t.group: t.median_ms for t in timings if t.variant == "candidate" and t.median_ms}
    after = compare_held(spare, held, result.value["recheck_outputs"], options)
    checks = [anticheat.recheck_after_timing(after, "timing loop"),
              anticheat.side_stream(result.value["side_stream_ratio"], medians)]
    return timings, checks, tuple(result.value["notes"])
