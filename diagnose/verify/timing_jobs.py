"""The harness's timing workers: each runs in its own fresh subprocess, on a device (`runner.call`).

- `baseline_timing_job` times what a candidate is compared with: the initial kernel (the task as
  given), the reference's eager forward and its `torch.compile`, interleaved on the inputs the
  reference job drew for the first seed. It imports the reference (with torch put back as it ships,
  as the reference job does) and the initial file, never a candidate: no candidate code can slow the
  baselines down (wrap `Model.forward`, patch a torch op the eager path calls) to make its own speedup
  look larger. The parent runs it once per prepared reference (`Reference.baseline_timings`), so the
  candidates of one run share one set of baselines, and `torch.compile` runs once, not per candidate.
- `timing_job` times the candidate alone in its process, one timed call drawn at random running on
  the re-check's inputs (a few elements of the timed buffers changed in place just before it:
  `TimedRecheck`), then measures what only a device shows (work left on side streams, calls that escape
  the timed stream), then runs the candidate once more on those buffers, new memory read as NaN there
  as in every check case. Both outputs are judged in the parent, which alone holds the re-check's
  reference output (a fresh case after the loop instead where the reference mutates its inputs or has
  no floating-point input to change).
- `side_by_side_job` times several variants of one kernel module (the launch-config search's
  configurations) interleaved in one process on the same saved inputs: a ranking, not a verification
  (the one chosen is verified in full afterwards).

A candidate and its baselines are timed in two processes, so not interleaved: both use the same
protocol (`diagnose.verify.timing.measure`: warm-up, L2 flushed before every call, medians until
stable), and a candidate alone in its process holds no place in an order to gain or lose by.

The device's event class is pinned before any task code runs, and a job whose events were replaced
fails (`timing.check_pinned`). The timing loops hold the device lock alone (`device_lock.exclusive`).
Inputs come from the parent's vault, each group's when its timing starts and the re-check's change
after the last timed call (`diagnose/verify/vault.py`; `timing_files` and `baseline_files` say which).
"""

from __future__ import annotations

import os
import secrets
from typing import Any, Callable

from diagnose.runtime import device_lock
from diagnose.runtime.devices import empty_cache, events, torch_device
from diagnose.task import import_task_file
from diagnose.verify import instrument, tensors, timing
from diagnose.verify.fetch import INIT_INPUTS, STATE, fetch
from diagnose.verify.inputs import apply_perturbation
from diagnose.verify.jobs import build_model, out_dir, run_forward
from diagnose.verify.recipes import CaseInputs
from diagnose.verify.torch_state import import_reference
from diagnose.verify.uninitialized import fill_uninitialized


def baseline_files(inputs: dict[str, str]) -> list[str]:
    """The vault's files `baseline_timing_job` and `side_by_side_job` fetch, for each group's `inputs`."""
    return [INIT_INPUTS, STATE, *inputs.values()]


def rechecks_timed_buffers(recheck: dict, groups, seed: int) -> bool:
    """Whether the re-check after timing changes the buffers a group was timed on (those of its base
    case), rather than running on inputs of its own."""
    return bool(recheck.get("in_place")) and recheck["group"] in groups and seed == recheck["base_seed"]


def timing_files(inputs: dict[str, str], recheck: dict, seed: int) -> list[str]:
    """The vault's files `timing_job` fetches: each group's `inputs` (of `seed`), then the re-check's
    change to the timed buffers, or its own inputs where it cannot change them in place."""
    in_place = rechecks_timed_buffers(recheck, inputs, seed)
    return [*baseline_files(inputs), recheck["perturbation"] if in_place else recheck["inputs"]]


# The timed call that is the re-check is drawn from this many: four rounds of a batch each.
RECHECK_WITHIN = 4 * timing.BATCH


class TimedRecheck:
    """The candidate's timed call, one of whose calls is the re-check: the k-th timed call once armed (k
    drawn when the warm-up ends, up to `RECHECK_WITHIN` timed calls; the timing loop goes on until it has
    fired) fetches the re-check's change, writes it into the timed buffers, and keeps its output for the
    parent to judge. Drawn from several rounds rather than the first: a candidate that counts its timed
    calls and stops working after the first round would otherwise be judged only while it works.

    That call is flushed, timed and called from the same frames as every other: a candidate that tells
    the timed calls apart from the judged ones (by the stack, by the L2 flush buffer changing) and does
    no work in them returns a stale or empty output there and fails `recheck_in_timing`. The change is
    fetched only at that call: known earlier, its sixteen positions would be a cheap tell of their own.
    Its fetch, write and the output's copy fall inside that one sample's events; the median of ten or
    more does not move."""

    def __init__(self, call: Callable[[], Any], inputs: list, change: Callable[[], list]) -> None:
        self.call, self.inputs, self.change = call, inputs, change
        self.countdown: int | None = None
        self.output: list | None = None

    def arm(self, calls: int = RECHECK_WITHIN) -> None:
        """`calls`: about how many timed calls the timing budget leaves (a slow call gets few), so that the
        re-check falls among them."""
        self.countdown = 1 + secrets.randbelow(max(1, min(calls, RECHECK_WITHIN)))

    @property
    def pending(self) -> bool:
        """Armed and not yet fired."""
        return self.countdown is not None

    def __call__(self) -> Any:
        if self.countdown is None:
            return self.call()
        self.countdown -= 1
        if self.countdown:
            return self.call()
        self.countdown = None
        apply_perturbation(self.inputs, self.change())
        out = self.call()
        self.output = [t.clone() for t in tensors.flatten(out)]
        return out


def baseline_timing_job(payload: dict) -> dict:
    """Time the initial kernel, eager and torch.compile on each group's saved inputs; no candidate here."""
    import torch  # deferred: torch is heavy

    device, lock = payload["device"], payload.get("device_lock")
    pinned = timing.PinnedEvents.of(events(device))  # before any task code runs here
    # This worker runs beside the candidate's checks (`harness.verify_against`): Inductor's compile pool,
    # one process per core by default, slowed the parent's comparisons 3x (softmax on an H100: 5 -> 14 s).
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or 1) // 4)))
    reference, _ = import_reference(payload["reference"])
    inputs_of = CaseInputs(payload, out_dir(payload), {payload["reference"]: reference})
    init_inputs, state = fetch(payload, INIT_INPUTS), fetch(payload, STATE)
    models = {}
    if payload.get("initial"):
        models["initial"] = build_model(import_task_file(payload["initial"]).ModelNew, init_inputs, device, state)
    eager = build_model(reference.Model, init_inputs, device)
    # A kernel module's reference is its own original code: the initial kernel, not a PyTorch baseline.
    baselines = [] if getattr(reference.Model, "replays_module", False) else payload["baselines"]
    timer = timing.EventTimer(device, backend=pinned)
    timings, notes = [], []
    for group in payload["groups"]:
        with device_lock.shared(lock):
            inputs = tensors.to_device(inputs_of(payload["inputs"][group]), torch_device(device))
        variants = {name: (lambda m=m, x=inputs: m(*x)) for name, m in models.items()}
        if "eager" in baselines:
            variants["eager"] = lambda x=inputs: eager(*x)
        if "compile" in baselines:
            try:
                compiled = static_compile(eager)
                with torch.no_grad(), device_lock.shared(lock):  # compiling is host work: not under the timing lock
                    compiled(*inputs)
                variants["compile"] = lambda x=inputs: compiled(*x)
            except Exception as exc:  # noqa: BLE001 - a baseline that cannot compile is reported, not fatal
                notes.append(f"torch.compile failed on group {group}: {type(exc).__name__}: {exc}"[:300])
        if variants:
            with torch.no_grad(), device_lock.exclusive(lock):
                timings += [t.to_dict() for t in timing.measure(timer, variants, group)]
        del inputs, variants
        empty_cache(device)
    timing.check_pinned(pinned)
    return {"timings": timings, "notes": notes}


def static_compile(model, backend: str | Callable = "inductor"):
    """`torch.compile` of `model` for one group's shapes, as a user with those shapes alone gets it: after a
    `torch._dynamo.reset()`, with `dynamic=False`. Compiled once for all groups, the second group's new
    shape recompiled the model with symbolic sizes (dynamo's automatic dynamic shapes), and its kernels
    ran slower than a static compile's: the fp16 softmax group of `examples/softmax.py` 0.1919 ms against
    0.1530 ms on an H100 (session 37), a baseline 25% slow, every speedup over it 25% high."""
    import torch  # deferred: torch is heavy

    torch._dynamo.reset()
    return torch.compile(model, dynamic=False, backend=backend)


def timing_job(payload: dict) -> dict:
    """Time the candidate alone on each group's saved inputs, then re-check it on the timed buffers."""
    import torch  # deferred: torch is heavy

    device, lock = payload["device"], payload.get("device_lock")
    pinned = timing.PinnedEvents.of(events(device))  # before any candidate code runs here
    candidate = import_task_file(payload["candidate"])
    inputs_of = CaseInputs(payload, out_dir(payload))
    init_inputs, state = fetch(payload, INIT_INPUTS), fetch(payload, STATE)
    model = build_model(candidate.ModelNew, init_inputs, device, state)
    timer = timing.EventTimer(device, backend=pinned)
    timings, side_streams, escapes = [], {}, {}
    kernels = instrument.user_kernels()
    recheck, timed_recheck = payload["recheck"], None
    for group in payload["groups"]:
        with device_lock.shared(lock):
            inputs = tensors.to_device(inputs_of(payload["inputs"][group]), torch_device(device))
        call = lambda x=inputs: model(*x)  # noqa: E731 - one name for the three measurements below
        probe = None
        if group == recheck["group"] and rechecks_timed_buffers(recheck, payload["groups"], payload["seed"]):
            # the re-check changes these very buffers, during the timed calls
            call = probe = timed_recheck = TimedRecheck(call, inputs, lambda: fetch(payload, recheck["perturbation"]))
        with torch.no_grad(), device_lock.exclusive(lock):
            (measured,) = timing.measure(timer, {"candidate": call}, group, probe)
            timings.append(measured.to_dict())
            side_streams[group] = timing.side_stream_ratio(timer, call, call_ms=measured.median_ms)
            with instrument.streams_noted(kernels, timer.backend.current_stream) as streams:
                escapes[group] = timing.escaped_calls(timer, call, streams, call_ms=measured.median_ms)
        del inputs, call
        empty_cache(device)
    timing.check_pinned(pinned)
    # The reference computed the re-check's output with new memory read as NaN: so does the re-check, or
    # an output its kernel only partly writes (as the reference's does) holds the timed calls' numbers
    # where the reference holds NaN. Only now: the fill costs every allocation in the timed loops.
    fill_uninitialized(out_dir(payload))
    with device_lock.shared(lock):
        if timed_recheck is not None:
            if timed_recheck.output is None:  # a loop that never reached its re-check: changed here
                apply_perturbation(timed_recheck.inputs, fetch(payload, recheck["perturbation"]))
            inputs = timed_recheck.inputs  # changed as the re-check's reference output expects
        else:
            inputs = tensors.to_device(inputs_of(recheck["inputs"]), torch_device(device))
        outputs = run_forward(model, inputs, device)
    in_timing = timed_recheck and timed_recheck.output
    return {
        "timings": timings,
        "side_stream_ratio": side_streams,
        "escaped_calls": escapes,
        "recheck_outputs": tensors.save(outputs, out_dir(payload) / "out_recheck_after_timing.pt"),
        "timed_recheck_outputs": (
            tensors.save(tensors.to_cpu(in_timing), out_dir(payload) / "out_recheck_in_timing.pt")
            if in_timing is not None
            else None
        ),
    }


def side_by_side_job(payload: dict) -> dict:
    """Time the `ModelNew` of every variant file on each group's saved inputs, interleaved (one
    `timing.measure` per group over all of them), under the device lock alone."""
    import torch  # deferred: torch is heavy

    device, lock = payload["device"], payload.get("device_lock")
    pinned = timing.PinnedEvents.of(events(device))  # before any variant's code runs here
    inputs_of = CaseInputs(payload, out_dir(payload))
    init_inputs, state = fetch(payload, INIT_INPUTS), fetch(payload, STATE)
    models = {
        name: build_model(import_task_file(path).ModelNew, init_inputs, device, state)
        for name, path in payload["variants"].items()
    }
    timer = timing.EventTimer(device, backend=pinned)
    timings = []
    for group in payload["groups"]:
        with device_lock.shared(lock):
            inputs = tensors.to_device(inputs_of(payload["inputs"][group]), torch_device(device))
        variants = {name: (lambda m=m, x=inputs: m(*x)) for name, m in models.items()}
        with torch.no_grad(), device_lock.exclusive(lock):
            timings += [t.to_dict() for t in timing.measure(timer, variants, group)]
        del inputs, variants
        empty_cache(device)
    timing.check_pinned(pinned)
    return {"timings": timings}
