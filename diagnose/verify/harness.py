"""Verifying and timing one candidate against its task: the parent side of the harness.

The flow, each step a fresh worker (`diagnose/verify/jobs.py`):

1. the reference job draws every case's inputs (several seeds x the selected input groups, plus one
   spare case for the re-check) and computes the reference outputs; the parent seals its files in a
   vault (`diagnose/verify/vault.py`), from which each later job fetches a case's inputs only when the
   case runs, each once (`anticheat.inputs_in_turn`): the inputs themselves, or where the draw
   reproduces, the case's recipe, from which the job draws them again (`diagnose/verify/recipes.py`);
2. the candidate job runs `ModelNew` on the same inputs, its launches counted and the reference trapped;
   where nothing is timed it also soaks (repeated calls) and then runs the spare case;
3. the parent compares outputs and decides the anti-cheat checks (`diagnose/verify/anticheat.py`);
   the reference outputs were read into the parent and their files deleted before step 2, so no
   candidate process can find them on disk;
4. a correct candidate gets a ghost replay in a fresh worker;
5. on a device, the timing job times the candidate and runs the spare case after timing; its baselines
   (the initial kernel, eager, torch.compile) are timed in a worker of their own that never imports a
   candidate, once per prepared reference (`diagnose/verify/timing_jobs.py`), started beside step 2 so
   that its imports and compiles overlap the candidate's checks.

The reference step can be prepared once and shared by many candidates of one task, or kept for a
whole run (`diagnose/verify/reference.py`); the parent's reading of the workers' files is `diagnose/verify/judge.py`.

Every job runs where the device's placement says (`diagnose.toolchain.placement.require`): this
interpreter for `cuda` and `cpu` (interpreted), the interpreter that has torch_npu for `npu` (the
Ascend toolchain's, through `runner.call(..., python=...)`). Reference failures are the task's fault
and raise `UsageError`; candidate failures become the verdict.
"""

from __future__ import annotations

import ctypes
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable

from diagnose.records import CheckResult, Failure, Timing, Verdict
from diagnose.runtime.devices import Placement, timed
from diagnose.runtime.runner import prestart
from diagnose.task import Task
from diagnose.verify import anticheat, recipes, tensors
from diagnose.verify.jobs import candidate_files
from diagnose.verify.judge import Held, compare_held, judge, key
from diagnose.verify.options import CheckOptions, placement_for
from diagnose.verify.reference import KeptReference, Reference, prepared
from diagnose.verify.timing_jobs import baseline_files, timing_files

__all__ = ["NOT_TIMED", "PHASES", "CheckOptions", "KeptReference", "Reference", "prepared", "verify"]

NOT_TIMED = "not timed: no device here (Triton interpreter on CPU)"


# The steps of one verification, in order, and what each does (for progress lines).
PHASES = {
    "reference": "running the reference (Model) on every case",
    "candidate": "running the candidate (ModelNew) on the same inputs",
    "compare": "comparing outputs with the reference's",
    "ghost": "ghost replay (the Triton launches made no-ops must break the output)",
    "timing": "timing the candidate and its baselines",
}


class Phases:
    """Wall seconds of each step of one verification, for the report (where does `check` spend its time);
    `on_start(name)`, when given, hears of each step as it starts."""

    def __init__(self, on_start: Callable[[str], None] | None = None) -> None:
        self.start = time.perf_counter()
        self.seconds: list[tuple[str, float]] = []
        self.on_start = on_start

    @contextmanager
    def clock(self, name: str):
        if self.on_start is not None:
            self.on_start(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds.append((name, round(time.perf_counter() - start, 3)))

    def done(self) -> tuple[tuple[str, float], ...]:
        """The steps so far, then the total since the verification began."""
        return (*self.seconds, ("total", round(time.perf_counter() - self.start, 3)))


def hide_memory() -> None:
    """Make this process non-dumpable (Linux `prctl(PR_SET_DUMPABLE, 0)`): this is where the reference
    outputs are held, and a worker running as the same user can then no longer read them through
    `/proc/<pid>/mem` or `map_files` (a root worker still can: `docs/threat-model.md`). Elsewhere, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):  # no prctl in this libc: nothing to hide behind
        return


def not_timed(groups: list[str], options: CheckOptions) -> tuple[Timing, ...]:
    variants = ["candidate", *(["initial"] if options.initial else []), *options.baselines]
    return tuple(Timing(v, g, note=NOT_TIMED) for g in groups for v in variants)


def verify(
    task: Task,
    options: CheckOptions = CheckOptions(),
    reference: Reference | None = None,
    keep: KeptReference | None = None,
) -> Verdict:
    """Correctness, anti-cheat and (on a device) timing of the task's candidate.

    `reference`: a prepared reference of the same task (`prepared`) to reuse; when it does not serve
    this task and these options the reference job runs again. `keep`: a run's kept reference, used
    when it serves and otherwise prepared again and kept for the next verification.

    Where a job drew a case's inputs differently from the reference job (`recipes.NOT_REPRODUCED`: a
    draw that depends on more than its seed and slipped past the reference job's own test), the
    verification runs again with the inputs in files, and says so.
    """
    verdict = verify_once(task, options, reference, keep)
    if options.recipes and not_reproduced(verdict):
        again = verify_once(task, replace(options, recipes=False), None, keep)
        note = "the task's inputs did not reproduce from their seeds in every job: verified again with them in files"
        return replace(again, notes=(*again.notes, note))
    return verdict


def not_reproduced(verdict: Verdict) -> bool:
    """Whether any job of the verification failed to draw its inputs as the reference job did."""
    said = [verdict.failure.message if verdict.failure else "", *(c.detail for c in verdict.checks), *verdict.notes]
    return any(recipes.NOT_REPRODUCED in text for text in said)


def verify_once(task: Task, options: CheckOptions, reference: Reference | None, keep: KeptReference | None) -> Verdict:
    """`verify`, with the inputs as `options.recipes` says."""
    hide_memory()
    tensors.import_beside()
    if options.placement is None and options.device in ("cpu", "cuda"):  # workers of this interpreter
        prestart(interpret=options.device == "cpu")
    where = placement_for(options)
    phases = Phases(options.on_phase)
    if reference is None and keep is not None:
        reference = keep.serving(task, options)
        if reference is None:
            return verify_against(task, options, where, keep.prepare(task, options, where, phases.clock), phases)
    if reference is not None and reference.serves(task, options):
        phases.seconds.append(("reference (prepared)", 0.0))
        return verify_against(task, options, where, reference, phases)
    with prepared(task, options, where, phases.clock) as fresh:
        return verify_against(task, options, where, fresh, phases)


def verify_against(
    task: Task, options: CheckOptions, where: Placement, reference: Reference, phases: Phases
) -> Verdict:
    clock, held, tolerances = phases.clock, reference.held, dict(options.tolerances)
    versions = tuple(sorted(reference.value["versions"].items()))
    notes = tuple(reference.value["notes"])
    cases, spare = reference.cases, reference.spare
    on_device = timed(options.device)
    refused: list[str] = []  # requests the vault refused, in any job of this verification
    with tempfile.TemporaryDirectory(prefix="diagnose-candidate-") as out, ThreadPoolExecutor(1) as beside:
        common = {
            "device": options.device,
            "job_dir": reference.job_dir,
            "out_dir": out,
            # The baselines are timed beside the candidate's checks: a lock of this verification's own
            # where none was given keeps their timing loops apart from the candidate's kernels.
            "device_lock": options.device_lock or (str(Path(out) / "device.lock") if on_device else None),
        }
        # On a device, the baselines' worker (an import, torch.compile, its timing loops) runs while the
        # candidate is checked; its timings are waited for only when the candidate's are taken.
        baselines = beside.submit(time_baselines, task, reference, common, options, where) if on_device else None
        judged_cases, soak = cases + ([] if on_device else [spare]), 0 if on_device else options.soak
        with clock("candidate"):
            cand = reference.run_job(
                "candidate_job",
                {**common, "candidate": str(task.candidate_path), "mode": "check", "cases": judged_cases, "soak": soak},
                candidate_files(judged_cases, soak),
                options,
                where,
                refused,
            )
        if not cand.ok:
            return Verdict(
                False, options.device, failure=cand.failure, versions=versions, notes=notes, phases=phases.done()
            )
        results = [r for r in cand.value["cases"] if r["role"] != "recheck"]
        empty = empty_cases(cases, held)
        with clock("compare"):
            judged = judge(cases, results, held, tolerances, reference.vault.load)
        checks = [
            anticheat.launches_triton(results, empty),
            anticheat.no_reference_call(cand.value["reference_calls"]),
            anticheat.input_sensitivity(list(judged.sensitivity)),
            anticheat.input_mutation(list(judged.mutations)),
        ]
        correct = all(c.passed for c in judged.cases)
        timings: tuple[Timing, ...] = not_timed(reference.value["selected"], options)
        if correct:
            with clock("ghost"):
                # On cases with something to compute: an empty output is as correct with no-ops as without,
                # and so is one of zeros where the host allocated zeros (Liger's JSD, every label ignored).
                computed = [c for c in cases if (c["group"], c["seed"]) not in empty] or cases[:1]
                computed = [c for c in computed if not all_zeros(held[key(c)].outputs)] or computed
                checks.append(ghost_check(computed, reference, common, task, options, where, refused))
            if on_device:
                with clock("timing"):
                    timings, timing_checks, timing_notes = time_candidate(
                        task, reference, common, options, where, refused, baselines.result
                    )
                checks += timing_checks
                notes += timing_notes
            else:
                after = next(r for r in cand.value["cases"] if r["role"] == "recheck")
                checks.append(
                    anticheat.recheck_after_timing(
                        compare_held(spare, held, after["outputs"], tolerances),
                        f"soak of {int(cand.value.get('soak_calls', options.soak))} calls",
                    )
                )
        checks.append(anticheat.inputs_in_turn(refused))
    passed = correct and all(c.passed for c in checks)
    return Verdict(
        passed,
        options.device,
        judged.cases,
        tuple(checks),
        timings,
        versions=versions,
        notes=notes,
        phases=phases.done(),
    )


def empty_cases(cases: list[dict], held: Held) -> frozenset[tuple[str, int]]:
    """The cases whose reference outputs hold no element at all."""
    return frozenset(
        (c["group"], c["seed"])
        for c in cases
        if all(getattr(out, "numel", lambda: 1)() == 0 for out in held[key(c)].outputs)
    )


def all_zeros(outputs) -> bool:
    """Reference outputs that are zeros and nothing else: a kernel that writes nothing into a buffer its
    host zeroed gets them right, so such a case cannot tell whether Triton computed an output."""
    return all(getattr(out, "numel", lambda: 0)() > 0 and not bool(out.count_nonzero()) for out in outputs)


def ghost_check(
    cases: list[dict],
    reference: Reference,
    common: dict,
    task: Task,
    options: CheckOptions,
    where: Placement,
    refused: list[str],
) -> CheckResult:
    """The candidate's Triton launches made no-ops must break its output, judged on the first of `cases`
    that can tell. A case whose output the task as given (`options.initial`) also gets right with its own
    launches made no-ops tells nothing, and the next one is tried: Liger's JSD with every label ignored
    returns the sum of a loss the host allocated as zeros, whatever its kernel does. Without an initial
    kernel the first case decides, as it always did."""
    for case in cases:
        candidate = ghost_case(task.candidate_path, case, reference, common, options, where, refused)
        if not isinstance(candidate, str) and candidate.passed and options.initial is not None:
            initial = ghost_case(options.initial, case, reference, common, options, where, refused)
            if not isinstance(initial, str) and initial.passed:
                continue
        return (
            anticheat.ghost_replay(None, candidate)
            if isinstance(candidate, str)
            else anticheat.ghost_replay(candidate, None)
        )
    return anticheat.ghost_uninformative(len(cases))


def ghost_case(
    path, case: dict, reference: Reference, common: dict, options: CheckOptions, where: Placement, refused: list[str]
):
    """The ghost replay of the `ModelNew` of the file at `path` on one case: its comparison with the
    reference's output, or the failure's message when the run failed."""
    ghost = reference.run_job(
        "candidate_job",
        {**common, "candidate": str(path), "mode": "ghost", "cases": [case], "soak": 0},
        candidate_files([case], 0),
        options,
        where,
        refused,
    )
    if not ghost.ok:
        return ghost.failure.message
    # Only whether it passes matters here: a no-op replay's NaN output is settled by its first steps.
    held, outputs = reference.held, ghost.value["cases"][0]["outputs"]
    return compare_held(case, held, outputs, dict(options.tolerances), early=True)


def time_candidate(
    task: Task,
    reference: Reference,
    common: dict,
    options: CheckOptions,
    where: Placement,
    refused: list[str],
    timed_baselines: Callable[[], tuple[tuple[Timing, ...], tuple[str, ...]]],
):
    """Timings, the timing-phase checks and notes: the candidate's from its own timing worker, its
    baselines' (`timed_baselines()`, waited for once the candidate's are taken) from another that never
    imports a candidate (`time_baselines`). The two workers' timing loops take the device lock in turn:
    the candidate's worker starts while the baselines' still compiles (1.5 s of a `check` on an H100)."""
    selected, spare, seed = reference.value["selected"], reference.spare, options.seeds[0]
    inputs = reference.inputs_of(seed)
    result = reference.run_job(
        "timing_job",
        {
            **common,
            "candidate": str(task.candidate_path),
            "groups": selected,
            "seed": seed,
            "inputs": inputs,
            "recheck": spare,
        },
        timing_files(inputs, spare, seed),
        options,
        where,
        refused,
    )
    baselines, baseline_notes = timed_baselines()
    if not result.ok:
        failure: Failure = result.failure
        checks = [CheckResult("recheck_after_timing", False, f"timing run failed: {failure.kind}: {failure.message}")]
        return not_timed(selected, options), checks, baseline_notes
    candidate = [Timing(**t) for t in result.value["timings"]]
    timings = tuple(t for group in selected for t in (*candidate, *baselines) if t.group == group)
    medians = {t.group: t.median_ms for t in candidate if t.median_ms}
    after = compare_held(spare, reference.held, result.value["recheck_outputs"], dict(options.tolerances))
    in_timing = result.value.get("timed_recheck_outputs")
    timed = (
        compare_held(spare, reference.held, in_timing, dict(options.tolerances), unwritten=True) if in_timing else None
    )
    checks = [
        anticheat.recheck_after_timing(after, "timing loop"),
        anticheat.recheck_in_timing(timed),
        anticheat.side_stream(result.value["side_stream_ratio"], medians, result.value["escaped_calls"]),
    ]
    return timings, checks, baseline_notes


def time_baselines(
    task: Task, reference: Reference, common: dict, options: CheckOptions, where: Placement
) -> tuple[tuple[Timing, ...], tuple[str, ...]]:
    """The initial kernel's and the baselines' timings and notes, each timed once per prepared reference
    in a worker that imports the reference and the initial file only: a candidate cannot slow them down.
    An optimize run verifies the task as given without an initial kernel and its candidates with one:
    eager and torch.compile are timed for the first, and only the initial kernel for the rest. A failed
    run leaves its baselines untimed, with the reason in a note."""
    keys = reference.baseline_keys(options)
    with reference.baseline_lock:
        time_missing_baselines(task, reference, common, options, where, keys)
    held = [reference.baseline_timings[key] for key in keys.values()]
    return (
        tuple(t for timings, _ in held for t in timings),
        tuple(dict.fromkeys(n for _, notes in held for n in notes)),
    )


def time_missing_baselines(
    task: Task, reference: Reference, common: dict, options: CheckOptions, where: Placement, keys: dict[str, tuple]
) -> None:
    """Time the baselines of `keys` that `reference` has no timings of yet, and keep them there."""
    missing = [name for name, key in keys.items() if key not in reference.baseline_timings]
    if not missing:
        return
    selected, inputs = reference.value["selected"], reference.inputs_of(options.seeds[0])
    result = reference.run_job(
        "baseline_timing_job",
        {
            **common,
            "reference": str(task.reference_path),
            "initial": str(options.initial) if "initial" in missing else None,
            "groups": selected,
            "inputs": inputs,
            "baselines": [name for name in missing if name != "initial"],
        },
        baseline_files(inputs),
        options,
        where,
    )
    for name in missing:
        if result.ok:
            timings = tuple(Timing(**t) for t in result.value["timings"] if t["variant"] == name)
            notes = tuple(n for n in result.value["notes"] if name == "compile" and "torch.compile" in n)
        else:
            note = f"{name} not timed: {result.failure.kind}: {result.failure.message}"[:300]
            timings, notes = tuple(Timing(name, g, note=note) for g in selected), (note,)
        reference.baseline_timings[keys[name]] = (timings, notes)
