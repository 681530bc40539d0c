"""The profiling level's worker entries: each runs in a fresh subprocess (`diagnose.runtime.runner.call`).

- `device_job`: on a device, per input group: the work (bytes, FLOPs) counted on the reference, and
  the candidate timed beside its baselines with the harness's protocol; the device's ceilings from
  the cache (measured once when missing).
- `offline_job`: with no device, the work of the device-sized groups counted on `meta` tensors.
- `static_job`: the candidate's launches captured (on `meta` inputs), compiled offline for a target,
  their IR facts, `KernelFeatures`, the kernel's `def` line and, for the ncu join, the SASS line map.
- `ncu_target_job`: the process Nsight Compute watches: one warm-up forward, then one forward
  between `cudaProfilerStart` and `cudaProfilerStop`.

Every entry takes and returns JSON-able dicts; records travel as `to_dict()` output. Correctness is not
checked here (that is `diagnose check`): profiling times what it is given.
"""

from __future__ import annotations

import os
from typing import Any

from diagnose.cache import CACHE_ENV
from diagnose.ir.compile import CompileFailed, compile_launch
from diagnose.ir.facts import FactContext, facts_for
from diagnose.ir.launch import capture_task_launches, find_kernels, load_module
from diagnose.ir.specialize import expand_configs
from diagnose.profiling import ceilings as ceiling_cache
from diagnose.profiling.nvidia.source_page import sass_offsets
from diagnose.profiling.static.features import extract
from diagnose.profiling.work import count_work, count_work_offline, draw_on_meta
from diagnose.runtime import device_lock
from diagnose.runtime.devices import synchronize, torch_device, versions
from diagnose.targets import lookup
from diagnose.task import import_task_file
from diagnose.verify import tensors, timing
from diagnose.verify.inputs import draw, group_table, select_groups
from diagnose.verify.jobs import build_model
from diagnose.verify.timing_jobs import static_compile

SEED = 0


def _modules(payload: dict):
    reference = import_task_file(payload["reference"])
    candidate = reference if payload["candidate"] == payload["reference"] else import_task_file(payload["candidate"])
    return reference, candidate


def _groups(reference, device: str, wanted: list[str] | None) -> list[str]:
    return select_groups(list(group_table(reference)), device, wanted)


def device_job(payload: dict) -> dict:
    """Work, timings and ceilings on a device. Payload: reference, candidate, device, groups,
    baselines, initial, cache_root, refresh_ceilings, device_lock (timing and the ceilings' measurement
    hold it alone, the other device work shares it: `diagnose.runtime.device_lock`), known (the
    [variant, group] pairs timed already: not timed here, nor built where no group needs them)."""
    import torch  # deferred: torch is heavy

    device, lock = payload["device"], payload.get("device_lock")
    reference, candidate = _modules(payload)
    groups = _groups(reference, "cuda", payload.get("groups"))
    out: dict[str, Any] = {"groups": groups, "work": [], "timings": [], "notes": [], "versions": versions(device)}
    if device == "cuda":
        with device_lock.exclusive(lock):
            found, hit = ceiling_cache.cached_or_measured(
                device, payload.get("cache_root"), bool(payload.get("refresh_ceilings"))
            )
        out["ceilings"], out["ceilings_from_cache"] = found.to_dict(), hit
    init_inputs = list(reference.get_init_inputs())
    eager = build_model(reference.Model, init_inputs, device)
    state = {k: v.detach().cpu() for k, v in eager.state_dict().items()}
    known = {tuple(pair) for pair in payload.get("known", ())}
    wanted = {(v, g) for g in groups for v in ("candidate", "initial", "eager", "compile")} - known
    models = {}
    if any(v == "candidate" for v, _ in wanted):
        models["candidate"] = build_model(candidate.ModelNew, init_inputs, device, state)
    if payload.get("initial") and any(v == "initial" for v, _ in wanted):
        models["initial"] = build_model(import_task_file(payload["initial"]).ModelNew, init_inputs, device, state)
    timer = timing.EventTimer(device)
    for group in groups:
        inputs, _ = draw(reference, group, SEED)
        with device_lock.shared(lock):
            inputs = tensors.to_device(inputs, torch_device(device))
            out["work"].append(count_work(reference, eager, inputs, group).to_dict())
        variants = {name: (lambda m=m, x=inputs: m(*x)) for name, m in models.items() if (name, group) in wanted}
        if ("eager", group) in wanted:
            variants["eager"] = lambda x=inputs: eager(*x)
        if "compile" in payload.get("baselines", ()) and ("compile", group) in wanted:
            try:
                compiled = static_compile(eager)  # as the harness's baselines: static, per group
                with torch.no_grad(), device_lock.shared(lock):
                    compiled(*inputs)
                variants["compile"] = lambda c=compiled, x=inputs: c(*x)
            except Exception as exc:  # noqa: BLE001 - a baseline that cannot compile is a note
                out["notes"].append(f"torch.compile failed on {group}: {type(exc).__name__}: {exc}"[:300])
        if variants:
            with torch.no_grad(), device_lock.exclusive(lock):
                out["timings"] += [t.to_dict() for t in timing.measure(timer, variants, group)]
        del inputs, variants
        torch.cuda.empty_cache() if device == "cuda" else None
    return out


def offline_job(payload: dict) -> dict:
    """Work of the device-sized groups counted without a device. Payload: reference, candidate, groups."""
    reference, _ = _modules(payload)
    groups = _groups(reference, "cuda", payload.get("groups"))
    work, how = [], []
    for group in groups:
        counted, method = count_work_offline(reference, group)
        work.append(counted.to_dict())
        how.append(method)
    return {"groups": groups, "work": work, "counted_on": how}


def _capture(reference, module, kernels: dict, group: str) -> list:
    """The candidate's launches for one group, its kernels recording instead of launching."""
    import torch  # deferred: torch is heavy

    init_inputs = list(reference.get_init_inputs())
    module.get_init_inputs = lambda: init_inputs
    try:
        inputs = draw_on_meta(reference, group)
        module.get_inputs = lambda: inputs
        launches = capture_task_launches(module, kernels)
    except Exception:  # noqa: BLE001 - a forward that refuses meta tensors gets CPU tensors
        inputs, _ = draw(reference, group, SEED)
        module.get_inputs = lambda: inputs
        with torch.no_grad():
            launches = capture_task_launches(module, kernels)
    return launches


def static_job(payload: dict) -> dict:
    """Offline compile and IR features of the candidate's launches per group. Payload: reference,
    candidate, groups, target, cache_root, sass (include the SASS line map)."""
    if payload.get("cache_root"):
        os.environ[CACHE_ENV] = payload["cache_root"]
    target = lookup(payload["target"])
    reference, _ = _modules(payload)
    groups = _groups(reference, "cuda", payload.get("groups"))
    module = load_module(payload["candidate"])
    found = find_kernels(module)
    kernels, errors = [], []
    for group in groups:
        for launch in _capture(reference, module, found, group):
            for concrete in expand_configs(launch):
                user_path = concrete.jit.fn.__code__.co_filename
                try:
                    record = compile_launch(concrete, target)
                except CompileFailed as exc:
                    errors.append(f"{group}/{concrete.title}: {exc.message}")
                    continue
                ctx = FactContext(record, target, concrete.grid, user_path)
                facts = facts_for(ctx)
                entry = {
                    "group": group,
                    "kernel": concrete.kernel,
                    "title": concrete.title,
                    "grid": list(concrete.grid) if concrete.grid else None,
                    "location": ctx.kernel_location.to_dict() if ctx.kernel_location else None,
                    "features": extract(record, concrete, facts, target.sm_count).to_dict(),
                    "facts": [e.to_dict() for e in facts],
                }
                if payload.get("sass") and target.is_nvidia:
                    text = record.sass() or ""
                    # Every instruction stays (the join needs them all); only lines in the user's file count.
                    entry["sass"] = [
                        [off, ins, loc.line if loc and loc.path in (record.source_path, user_path) else None]
                        for off, ins, loc in sass_offsets(text)
                    ]
                    entry["sass_path"] = user_path
                kernels.append(entry)
    return {"groups": groups, "target": target.name, "kernels": kernels, "errors": errors}


def ncu_target_job(payload: dict) -> dict:
    """The forward Nsight Compute profiles. Payload: reference, candidate, device, group."""
    import torch  # deferred: torch is heavy

    device = payload.get("device", "cuda")
    reference, candidate = _modules(payload)
    model = build_model(candidate.ModelNew, list(reference.get_init_inputs()), device)
    inputs, _ = draw(reference, payload["group"], SEED)
    inputs = tensors.to_device(inputs, torch_device(device))
    with torch.no_grad():
        model(*inputs)  # compile and warm up outside the profiled range
        synchronize(device)
        torch.cuda.profiler.start()
        model(*inputs)
        synchronize(device)
        torch.cuda.profiler.stop()
    return {"group": payload["group"]}


def proton_job(payload: dict) -> dict:
    """Candidate and eager under Proton, per group. Payload: reference, candidate, device, groups,
    repeats, out (the hatchet file's path without its `.hatchet` suffix)."""
    import torch  # deferred: torch is heavy
    import triton.profiler as proton  # deferred: triton is heavy

    device = payload.get("device", "cuda")
    repeats = int(payload.get("repeats", 10))
    reference, candidate = _modules(payload)
    groups = _groups(reference, "cuda", payload.get("groups"))
    init_inputs = list(reference.get_init_inputs())
    eager = build_model(reference.Model, init_inputs, device)
    state = {k: v.detach().cpu() for k, v in eager.state_dict().items()}
    models = {"candidate": build_model(candidate.ModelNew, init_inputs, device, state), "eager": eager}
    prepared = []
    with torch.no_grad():
        for group in groups:
            inputs, _ = draw(reference, group, SEED)
            inputs = tensors.to_device(inputs, torch_device(device))
            work = count_work(reference, eager, inputs, group)
            for model in models.values():
                model(*inputs)  # JIT compiles and warm-up stay outside the profile
            prepared.append((group, inputs, work))
        synchronize(device)
        session = proton.start(payload["out"], hook="triton")
        for group, inputs, work in prepared:
            for variant, model in models.items():
                with proton.scope(f"{variant}@{group}", {"bytes": float(work.bytes), "flops": float(work.flops)}):
                    for _ in range(repeats):
                        model(*inputs)
                    synchronize(device)
        proton.finalize(session)
    return {"path": payload["out"] + ".hatchet", "groups": groups, "repeats": repeats}
