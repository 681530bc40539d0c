"""The harness's worker entries: each runs in its own fresh subprocess (`diagnose.runtime.runner.call`).

- `reference_job` imports the reference file, draws every case's inputs, runs `Model`, and writes inputs,
  reference outputs and the reference's state to the job folder.
- `candidate_job` imports the candidate file, builds `ModelNew` with the reference's state, and runs it
  on the saved inputs with its Triton launches counted (or, in `ghost` mode, turned into no-ops). It
  never sees a reference output: the parent reads those files and deletes them before it starts. It
  never sees a case's inputs before the case runs either: the parent holds them in its vault
  (`diagnose/verify/vault.py`) and the job fetches each when it needs it (`candidate_files` says which).

The timing workers are `diagnose/verify/timing_jobs.py`.

Every entry runs in the interpreter of the device's placement (`diagnose.toolchain.placement`):
for `npu` that is an interpreter where torch_npu imports (usually the Ascend toolchain's), so this
module and what it imports need only the standard library, torch and triton. Tensors go to the
device through `torch_device(device)` ("cuda", "npu", or "cpu" for the interpreter).

On a device shared by several workers (`diagnose.runtime.device_lock`, the payload's `device_lock`),
what runs kernels holds the lock shared and the timing loop holds it alone.

Values travel as files (`diagnose/verify/tensors.py`); the returned dicts carry only paths and counts.
The reference job writes into `job_dir`, whose files the parent then seals in its vault; later jobs
fetch them from there (`diagnose.verify.fetch`) and write their own into `out_dir` (one per
verification, so that candidates verified at once against one prepared reference do not collide).
A candidate's inputs after the call travel only when the call changed one.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

from diagnose.runtime import device_lock
from diagnose.runtime.devices import poison_allocator, synchronize, torch_device, versions
from diagnose.task import import_task_file
from diagnose.verify import instrument, oracle, recipes, shapes, tensors
from diagnose.verify.fetch import INIT_INPUTS, STATE, fetch
from diagnose.verify.inputs import apply_perturbation, group_table, perturbation_for, select_groups
from diagnose.verify.torch_state import import_reference
from diagnose.verify.uninitialized import fill_uninitialized

INIT_SEED = 42
# The soak where nothing is timed (CPU): `soak` calls, but past SOAK_MIN calls it stops once it has run
# SOAK_S seconds. Twenty calls of a large interpreted kernel took 20 s of a 28 s check; nothing is timed
# there, so a candidate that changes after many calls gains no speed by it, and the device's timing loop
# and its re-check still see every call.
SOAK_MIN = 3
SOAK_S = 1.0


def build_model(cls, init_inputs: list, device: str, state: dict | None = None):
    """Construct a model the way both sides do (same seed), then copy the reference's state in."""
    import torch  # deferred: torch is heavy

    torch.manual_seed(INIT_SEED)
    model = cls(*init_inputs).to(torch_device(device))
    if state is not None:
        own = model.state_dict()
        if own and all(k in state and state[k].shape == v.shape for k, v in own.items()):
            model.load_state_dict({k: state[k] for k in own}, strict=False)
    return model


def run_forward(model, inputs: list, device: str, plain: bool = False) -> list:
    """The forward's outputs as CPU tensors; `plain`: each must be a plain dense `torch.Tensor` (a
    candidate's), so that what is judged was computed by the call and not on first inspection."""
    import torch  # deferred: torch is heavy

    with torch.no_grad():
        out = model(*inputs)
    outputs = tensors.flatten(out)
    if plain:
        tensors.require_plain(outputs)
    synchronize(device)
    return tensors.to_cpu(outputs)


def salted(payload: dict, seed: int) -> int:
    """The generator seed of case `seed`: mixed with the verification's secret salt (`reference.prepared`)."""
    digest = hashlib.sha256(f"{payload.get('salt', 0)}:{seed}".encode()).digest()
    return int.from_bytes(digest[:7], "little")


def reference_job(payload: dict) -> dict:
    """Draw the inputs of every case and compute the reference outputs, with new memory read as NaN as
    in the candidate's job: where the reference's own kernel leaves an output unwritten (TritonBench's
    attention stores 96 of a 128-wide head into `torch.empty_like`), the reference holds NaN, and a
    candidate that leaves the same elements unwritten agrees with it; one that leaves out more does not.
    (Torch's fill is enough here: the candidate's job also poisons the allocator before each case, which
    on the CPU costs a fill of four times the inputs per case, a sixth of a verification's time.)"""
    device, job, reference = payload["device"], Path(payload["job_dir"]), payload["reference"]
    module, restored = import_reference(reference)
    fill_uninitialized(job)  # after the import: the task file's switches are put back to torch's own there
    names = list(group_table(module))
    groups = select_groups(names, device, payload.get("groups"))
    init_inputs = list(module.get_init_inputs())
    model = build_model(module.Model, init_inputs, device)
    launches, watched = instrument.LaunchLog(), "triton" in sys.modules
    if watched:  # a reference that launches Triton kernels gets no float64 oracle
        instrument.watch_launches(launches)
    exact = Exact(model, launches, watched)
    tensors.save(init_inputs, job / INIT_INPUTS)
    tensors.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, job / STATE)
    plan = [(g, s, "check") for g in groups for s in payload["seeds"]]
    plan.append((groups[0], payload["recheck_seed"], "recheck"))
    cases, first = [], None  # first: the first check case's inputs as drawn, and its recipe (None: no recipe)
    notes = [f"the task file changed {name} at import; the reference ran with torch's own" for name in restored]
    lock = payload.get("device_lock")
    for group, seed, role in plan:
        perturbation, drawn_notes = [], []
        if role == "recheck":  # the first check case's inputs with a few elements changed (`perturbation_for`)
            inputs = first[0]
            perturbation = perturbation_for(inputs, salted(payload, seed))
            apply_perturbation(inputs, perturbation)
            case_recipe = {**first[1], "swaps": perturbation} if first[1] is not None else None
        if not perturbation:
            inputs, drawn_notes, case_recipe = drawn_case(
                module, payload, recipes.recipe(reference, group, salted(payload, seed)), job
            )
        notes += drawn_notes
        stem = f"{group}_{seed}"
        if first is None:  # as drawn: the reference may change its inputs in place
            first = ([v.clone() if hasattr(v, "clone") else v for v in inputs], case_recipe)
        case = {
            "group": group,
            "seed": seed,
            "role": role,
            **reference_case(model, inputs, job, stem, device, lock, case_recipe, exact, group),
        }
        if perturbation:
            case["perturbation"] = tensors.save(perturbation, job / f"perturb_{stem}.pt")
            case["base_seed"] = payload["seeds"][0]
            # In place on the timed buffers only where the reference leaves its inputs as they were.
            case["in_place"] = not cases[0]["mutated"]
        cases.append(case)
        del inputs
    del first
    shape_cases, shape_notes = unseen_shape_cases(module, model, groups, payload, exact)
    return {
        "groups": names,
        "selected": groups,
        "cases": cases + shape_cases,
        "notes": sorted(set(notes + shape_notes + oracle_notes(cases + shape_cases) + [exact.note] * bool(exact.note))),
        "versions": versions(device),
    }


def drawn_case(module, payload: dict, case: dict, job: Path) -> tuple[list, list[str], dict | None]:
    """A case's inputs drawn in the reference job (on the device where the task's functions allow it),
    the draw's notes, and the recipe a later job draws them again from: None where the draw does not
    reproduce, is large and on the host (`recipes.worth_a_recipe`), or the payload asks for files."""
    inputs, notes, placed = recipes.draw_placed(module, case, payload["device"], job)
    by_recipe = (
        payload.get("recipes", True)
        and recipes.worth_a_recipe(placed, inputs)
        and recipes.reproduces(module, placed, inputs, job)
    )
    return inputs, notes, placed if by_recipe else None


class Exact:
    """The reference, its float64 copy (`diagnose.verify.oracle`) and its launches: the oracle
    runs only while the reference has launched no Triton kernel (counted where the task file imported
    triton; one that imports it only once it runs is not told apart and gets no oracle: importing
    triton to watch a torch-only reference cost 0.3 s of every reference job), and only where its own
    forward took at most `oracle.BUDGET_S` (`note` says why not, once). A group whose first case's
    reference was within tolerance of its oracle gets none on its other cases (other seeds, the
    re-check, its sizes made odd and larger): the float64 forward costs more than the reference's
    (3-D convolutions on the CPU: 3-4x), and the same function at other values and nearby sizes is
    as exact."""

    def __init__(self, reference, launches: instrument.LaunchLog, watched: bool = True) -> None:
        self.reference, self.launches, self.watched = reference, launches, watched
        self.model = None  # the float64 copy, made when a case first needs it (not for a Triton reference)
        self.note: str | None = None
        self.exact_enough: set[str] = set()  # groups whose first case needed no oracle

    def oracles(self, group: str, pristine: list, outputs: list, device: str, seconds: float) -> list:
        """Per output, its oracle as a dict (`Oracle.as_dict`) or None; [] where there is no oracle.
        `seconds`: what the reference's forward took on this case."""
        if self.reference is not None and seconds > oracle.BUDGET_S:
            self.reference = self.model = None
            self.note = f"no float64 oracle: the reference's forward took {seconds:.1f} s, over {oracle.BUDGET_S:g} s"
        if self.launches.total() or (not self.watched and "triton" in sys.modules):
            self.reference = self.model = None  # a reference that launches kernels has no oracle
        if self.reference is None or group in self.exact_enough:
            return []
        if self.model is None:
            self.model = oracle.float64_model(self.reference)
            if self.model is None:
                self.reference = None
                return []
        import torch  # deferred: torch is heavy

        # Its own random state: a forward that draws (dropout) leaves the next case's draw as it was.
        devices = [torch.cuda.current_device()] if device == "cuda" else []
        try:
            with torch.random.fork_rng(devices=devices):
                inputs = tensors.to_device(oracle.float64_inputs(pristine), torch_device(device))
                exact = run_forward(self.model, inputs, device)
        except Exception:  # noqa: BLE001 - a model that does not run in float64 (or out of memory there) has none
            self.reference = self.model = None
            if device == "cuda":
                torch.cuda.empty_cache()
            return []
        found = oracle.measure(outputs, exact)
        if not any(found):
            self.exact_enough.add(group)
            return []
        return [o.as_dict() if o is not None else None for o in found]


def reference_case(
    model,
    inputs: list,
    job: Path,
    stem: str,
    device: str,
    lock: str | None,
    recipe: dict | None = None,
    exact: Exact | None = None,
    group: str = "",
) -> dict:
    """Run the reference on one case's inputs (left as they were drawn); the files a case names (its
    inputs, or its recipe where it has one: `recipes.written`; outputs; the inputs as the reference left
    them when it changed one; the float64 oracle of the outputs the reference is itself off, `exact`)."""
    pristine = [v.clone() if hasattr(v, "clone") else v for v in inputs]
    with device_lock.shared(lock):
        device_inputs = tensors.to_device(inputs, torch_device(device))
        started = time.perf_counter()
        outputs = run_forward(model, device_inputs, device)
        seconds = time.perf_counter() - started
        mutated = tensors.changed(pristine, device_inputs)
        oracles = exact.oracles(group, pristine, outputs, device, seconds) if exact is not None else []
    case = {
        "inputs": tensors.save(recipes.written(pristine, recipe), job / f"inputs_{stem}.pt"),
        "reference": tensors.save(outputs, job / f"ref_{stem}.pt"),
        "mutated": mutated,
    }
    if oracles:
        case["oracle"] = tensors.save(oracles, job / f"oracle_{stem}.pt")
        case["oracle_off"] = [[o["off"], o["worst"]] if o is not None else None for o in oracles]
    if mutated:
        case["reference_post_inputs"] = tensors.save(tensors.to_cpu(device_inputs), job / f"ref_post_{stem}.pt")
    return case


def oracle_notes(cases: list[dict]) -> list[str]:
    """Where the reference is itself off its float64 oracle, one note per group and output."""
    worst: dict[tuple[str, int], float] = {}
    for case in cases:
        for index, off in enumerate(case.get("oracle_off") or []):
            if off is not None:
                worst[case["group"], index] = max(worst.get((case["group"], index), 0.0), off[1])
    return [
        f"group {group} output {index}: the reference is off its float64 oracle by up to {far:.3g}; "
        "judged against both (diagnose/verify/oracle.py)"
        for (group, index), far in worst.items()
    ]


def unseen_shape_cases(
    module, model, groups: list[str], payload: dict, exact: Exact | None = None
) -> tuple[list[dict], list[str]]:
    """One case per group at sizes the task did not name (`diagnose.verify.shapes`), and notes saying
    which sizes were checked, or why a group's were not."""
    if not payload.get("unseen_shapes", True):
        return [], []
    if getattr(module, shapes.FIXED, False) is True:
        return [], [f"the task declares its shapes fixed ({shapes.FIXED} = True): no other sizes checked"]
    device, job, seed, reference = (
        payload["device"],
        Path(payload["job_dir"]),
        payload["seeds"][0],
        payload["reference"],
    )
    salt, table, cases, notes = salted(payload, seed), group_table(module), [], []
    # (case name, its group, the sizes as the note of a case checked / not checked says them, its recipe)
    unseen: list[tuple[str, str, str, str, dict]] = []
    # A replayed call's sizes are the project's own: the task names its unseen sizes (its rows cut).
    for name in module.get_unseen_shape_groups() if hasattr(module, "get_unseen_shape_groups") else {}:
        size = name.partition(shapes.SUFFIX)[2]
        checked = f"{size}, a size its captured calls did not have"
        unseen.append(
            (name, shapes.base_group(name), checked, size, recipes.recipe(reference, name, salt, unseen=name))
        )
    for group in groups:
        changed = shapes.perturbation(module, table[group])
        if changed:
            sizes = ", ".join(f"{name} {old} -> {new}" for name, (old, new) in changed.items())
            triples = [[name, old, new] for name, (old, new) in changed.items()]
            unseen.append(
                (
                    shapes.label(group, changed),
                    group,
                    f"sizes the task did not name: {sizes}",
                    f"other sizes ({sizes})",
                    recipes.recipe(reference, group, salt, sizes=triples),
                )
            )
    for name, group, checked, not_checked, case_recipe in unseen:
        try:
            inputs, _, placed = drawn_case(module, payload, case_recipe, job)
            case = reference_case(
                model, inputs, job, f"{name}_{seed}", device, payload.get("device_lock"), placed, exact, group
            )
        except Exception as exc:  # noqa: BLE001 - the reference's own limit: those sizes are fixed in fact
            notes.append(
                f"group {group} not checked at {not_checked}: the reference fails there "
                f"({type(exc).__name__}: {str(exc)[:120]})"
            )
            continue
        cases.append({"group": name, "seed": seed, "role": "shape", **case})
        notes.append(f"group {group} also checked at {checked}")
    return cases, notes


def out_dir(payload: dict) -> Path:
    """Where a candidate-side job writes: its verification's own folder, else the job folder."""
    return Path(payload.get("out_dir") or payload["job_dir"])


def run_case(
    model,
    case: dict,
    pristine: list,
    device: str,
    out: Path,
    mode: str,
    log: instrument.LaunchLog,
    lock: str | None = None,
) -> dict:
    """One forward on a case's inputs (`pristine`, left as they are); the inputs come back only if the
    call changed one (they can be GiB)."""
    before = log.total()
    with device_lock.shared(lock):
        inputs = tensors.copy_to(pristine, torch_device(device))
        # Memory a kernel forgets to write should read as NaN, not as zeros or an earlier result.
        poison_allocator(device, 4 * tensors.nbytes(inputs))
        outputs = run_forward(model, inputs, device, plain=True)
        changed = tensors.changed(pristine, inputs)  # where the inputs live: GiB need not cross to the host
    stem = f"{mode}_{case['group']}_{case['seed']}"
    return {
        "group": case["group"],
        "seed": case["seed"],
        "role": case["role"],
        "outputs": tensors.save(outputs, out / f"out_{stem}.pt"),
        "post_inputs": tensors.save(tensors.to_cpu(inputs), out / f"post_{stem}.pt") if changed else None,
        "launches": log.total() - before,
    }


def recheck_in_place(
    model,
    inputs: list,
    case: dict,
    perturbation: list,
    device: str,
    out: Path,
    log: instrument.LaunchLog,
    lock: str | None = None,
) -> dict:
    """The re-check on the buffers the candidate was just timed or soaked on, a few elements changed in
    place (`diagnose.verify.inputs.perturbation_for`); the reference computed the same change."""
    before = log.total()
    with device_lock.shared(lock):
        apply_perturbation(inputs, perturbation)
        outputs = run_forward(model, inputs, device, plain=True)
    return {
        "group": case["group"],
        "seed": case["seed"],
        "role": case["role"],
        "outputs": tensors.save(outputs, out / f"out_recheck_{case['group']}_{case['seed']}.pt"),
        "post_inputs": None,
        "launches": log.total() - before,
    }


def candidate_files(cases: list[dict], soak: int) -> list[str]:
    """The vault's files `candidate_job` fetches for `cases` with `soak`: what the parent's ticket names.
    The re-check fetches only the change it makes when it runs on the soaked buffers."""
    checks = [c for c in cases if c["role"] != "recheck"]
    names = [INIT_INPUTS, STATE, *(c["inputs"] for c in checks)]
    for case in cases:
        if case["role"] == "recheck":
            names.append(case["perturbation"] if soak and checks and case.get("in_place") else case["inputs"])
    return names


def candidate_job(payload: dict) -> dict:
    """Run ModelNew on every case; `mode` is `check` (launches counted) or `ghost` (no-ops). Each case's
    inputs are fetched from the vault right before it runs, the re-check's after the soak."""
    device, mode = payload["device"], payload["mode"]
    out, lock = out_dir(payload), payload.get("device_lock")
    log = instrument.LaunchLog()
    watched = instrument.watch_launches(log, ghost=mode == "ghost")
    instrument.watch_graph_replays(log)
    fill_uninitialized(out)
    module = import_task_file(payload["candidate"])
    instrument.trap_reference(module, log)
    init_inputs = fetch(payload, INIT_INPUTS)
    model = build_model(module.ModelNew, init_inputs, device, fetch(payload, STATE))
    inputs_of = recipes.CaseInputs(payload, out, candidate=(payload["candidate"], module))
    results, first = [], None
    checks = [c for c in payload["cases"] if c["role"] != "recheck"]  # the seeds' cases, then unseen shapes
    rechecks = [c for c in payload["cases"] if c["role"] == "recheck"]
    for case in checks:
        pristine = inputs_of(case["inputs"])
        first = pristine if first is None else first
        results.append(run_case(model, case, pristine, device, out, mode, log, lock))
    soaked, soak_calls = None, 0
    if payload.get("soak") and checks:
        # Stand-in for a timing loop where nothing is timed: a candidate that changes behaviour
        # after many calls is caught by the re-check case that follows. The soak runs on the first
        # case's inputs: the buffers an in-place re-check changes.
        soaked = tensors.copy_to(first, torch_device(device))
        began = time.monotonic()
        for calls in range(1, payload["soak"] + 1):
            run_forward(model, soaked, device)
            if calls >= SOAK_MIN and time.monotonic() - began > SOAK_S:
                break
        soak_calls = calls
    for case in rechecks:
        if soaked is not None and case.get("in_place"):
            results.append(
                recheck_in_place(model, soaked, case, fetch(payload, case["perturbation"]), device, out, log, lock)
            )
        else:
            results.append(run_case(model, case, inputs_of(case["inputs"]), device, out, mode, log, lock))
    if not instrument.intact(watched):
        raise RuntimeError(
            "the candidate replaced the harness's launch wrapper on Triton's kernels "
            "(`run`): its launches can be neither counted nor replayed"
        )
    return {
        "cases": results,
        "reference_calls": log.reference_calls,
        "soak_calls": soak_calls,
        "kernels": sorted(log.launches),
        "launches": dict(log.launches),
    }
