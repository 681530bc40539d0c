"""Level 1 of the escalation for one task: roofline position, classification, evidence (parent side).

`profile_task(path, options) -> ProfileResult`. Every execution of user code runs in a worker
(`diagnose.runtime.runner.call`, entries in `jobs.py`); this side imports neither torch nor triton.

On a device (`cuda`, `npu`):
1. `device_job`: the work per group, the candidate and its baselines timed, the measured ceilings;
2. `static_job`: the candidate's launches compiled offline for the target, IR facts, the static
   estimate's features (and, with `ncu`, the SASS line map);
3. with `ncu`: one Nsight Compute run on the first group (`nvidia/ncu_run.py`), its raw page parsed
   into counters and its source page joined to the SASS line map (hot lines);
4. with `proton`: the candidate and eager under Proton, every group (`nvidia/proton.py`): kernel
   times per scope, achieved bytes/s and FLOP/s, each kernel's share; the hatchet file is kept;
5. `classify.py` per group; the plot (`plot.py`) when a folder is given.

With no device (or `--device cpu`, the interpreter, where nothing is timed): `offline_job` counts
the work on `meta` tensors, `static_job` compiles, and the result carries the static **estimate**
against the target's nominal ceilings, labelled as such.

Everything the run measured goes to `<artifacts>/profile.json` (and the ncu pages beside it), so an
analysis can be redone later without the device.
"""

from __future__ import annotations

import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from diagnose.cache import cache_root
from diagnose.errors import DiagnoseError, UsageError
from diagnose.ir.inspect import evidence_from_dict
from diagnose.profiling.ceilings import Ceilings, nominal
from diagnose.profiling.classify import GroupView, classify, static_finding
from diagnose.profiling.nvidia import counters as ncu_counters, proton
from diagnose.profiling.nvidia import source_page
from diagnose.profiling.nvidia.csv_pages import parse_raw_page
from diagnose.profiling.nvidia.ncu_run import load_run, run_ncu
from diagnose.profiling.plot import plot_roofline
from diagnose.profiling.roofline import RooflinePosition, Work, position, roof_for
from diagnose.profiling.static.estimate import Estimate, estimate, hardware
from diagnose.profiling.static.features import Access, KernelFeatures
from diagnose.records import Evidence, Finding, Location, Record, Timing
from diagnose.runtime.runner import call
from diagnose.runtime.devices import DEVICES, timed
from diagnose.runtime.runner import user_failure
from diagnose.targets import DEFAULT_TARGET, Target, lookup
from diagnose.task import load_task
from diagnose.toolchain import placement

JOBS = "diagnose.profiling.jobs"
CAPABILITY_TARGETS = {"8.0": "cuda:sm80", "9.0": "cuda:sm90", "10.0": "cuda:sm100"}


@dataclass(frozen=True)
class ProfileOptions:
    """Where and how to profile."""

    device: str = "cuda"
    ncu: bool = False
    proton: bool = False
    proton_repeats: int = 10
    target: str | None = None
    groups: tuple[str, ...] | None = None
    baselines: tuple[str, ...] = ("eager",)
    initial: str | None = None
    artifacts_dir: str | None = None
    timeout_s: float = 900.0
    ncu_timeout_s: float = 300.0
    memory_limit: int = 48 * 2**30
    refresh_ceilings: bool = False
    # A lock file shared with other workers timing on the same device (`diagnose.runtime.device_lock`).
    device_lock: str | None = None
    # Timings already taken with the harness's protocol (the verification of the file profiled): the
    # device job does not time these (variant, group) pairs again.
    timings: tuple[Timing, ...] = ()


@dataclass(frozen=True)
class KernelView(Record):
    """One launch of one group: where its kernel is, its static features and estimate."""

    group: str
    kernel: str
    title: str
    grid: tuple[int, ...] | None
    location: Location | None
    features: KernelFeatures
    estimate: Estimate


@dataclass(frozen=True)
class ProfileResult(Record):
    """The profiling level's answer for one task."""

    task: str
    device: str
    timed: bool
    target: str
    ceilings: Ceilings
    groups: tuple[str, ...]
    work: tuple[Work, ...] = ()
    timings: tuple[Timing, ...] = ()
    positions: tuple[RooflinePosition, ...] = ()
    kernels: tuple[KernelView, ...] = ()
    counters: tuple[ncu_counters.NcuCounters, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    findings: tuple[tuple[str, tuple[Finding, ...]], ...] = ()
    plots: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    versions: tuple[tuple[str, str], ...] = field(default=())

    def group_findings(self, group: str) -> tuple[Finding, ...]:
        return dict(self.findings).get(group, ())


def _call(
    entry: str, payload: dict, options: ProfileOptions, interpret: bool = False, device: str | None = None
) -> dict:
    """Run a profiling job in a worker: here, or where `device`'s placement says (for `npu`, the
    interpreter that has torch_npu)."""
    placed = placement.require(device).runner_options() if device else {"interpret": interpret}
    result = call(f"{JOBS}:{entry}", payload, timeout_s=options.timeout_s, memory_limit=options.memory_limit, **placed)
    if not result.ok:
        failure = result.failure
        if failure.kind == "load_error":
            raise UsageError(f"{payload.get('candidate') or payload.get('reference')}: {failure.message}")
        paths = [p for p in (payload.get("reference"), payload.get("candidate")) if p]
        why = user_failure(failure, *paths)
        if why:  # the task's own code raised or hung: bad input, as for `check` and `optimize`
            raise UsageError(f"{paths[0] if paths else 'the task'}: {why}")
        raise DiagnoseError(f"profiling worker {entry} failed ({failure.kind}): {failure.message}")
    return result.value


def _features(data: dict) -> KernelFeatures:
    accesses = tuple(Access(**a) for a in data.pop("accesses", ()))
    return KernelFeatures(**data, accesses=accesses)


def _evidence(data: dict) -> Evidence:
    return evidence_from_dict(data)


def target_for(device: str, versions: dict, wanted: str | None) -> Target:
    if wanted:
        return lookup(wanted)
    if device == "cuda" and versions.get("capability") in CAPABILITY_TARGETS:
        return lookup(CAPABILITY_TARGETS[versions["capability"]])
    if device == "npu":
        return lookup("ascend:910b")
    return lookup(DEFAULT_TARGET)


def profile_task(path: str | Path, options: ProfileOptions = ProfileOptions()) -> ProfileResult:
    """Profile one task file (see the module docstring)."""
    if options.device not in DEVICES:
        raise UsageError(f"unknown device {options.device!r}; choose one of {', '.join(DEVICES)}")
    if options.ncu and options.device != "cuda":
        raise UsageError("--ncu needs --device cuda (Nsight Compute profiles NVIDIA GPUs)")
    if options.proton and options.device != "cuda":
        raise UsageError("--proton needs --device cuda (Proton reads kernel times through CUPTI)")
    task = load_task(path)
    if not task.kernels:
        raise UsageError(f"{task.candidate_path}: no @triton.jit kernel to profile")
    ok, why = placement.available(options.device)
    on_device = ok and timed(options.device)
    notes: list[str] = []
    if not on_device:
        notes.append(
            f"no device: {why}" if not ok else f"device {options.device} runs the Triton interpreter: nothing is timed"
        )
    root = str(cache_root().resolve())
    common = {
        "reference": str(task.reference_path),
        "candidate": str(task.candidate_path),
        "groups": list(options.groups) if options.groups else None,
        "cache_root": root,
    }
    artifacts = Path(options.artifacts_dir) if options.artifacts_dir else None
    # The offline compile needs only the target: where it is known before the device job, the two run
    # side by side (the compile is CPU work in a worker of its own; the device job times on the device).
    early = lookup(options.target) if options.target else None
    known = tuple(t for t in options.timings if t.median_ms)
    with ThreadPoolExecutor(1) as beside:
        compiled = beside.submit(_static_job, common, early, options) if early else None
        if on_device:
            dev = _call(
                "device_job",
                {
                    **common,
                    "device": options.device,
                    "baselines": list(options.baselines),
                    "device_lock": options.device_lock,
                    "initial": options.initial,
                    "refresh_ceilings": options.refresh_ceilings,
                    "known": sorted({(t.variant, t.group) for t in known}),
                },
                options,
                device=options.device,
            )
            versions = dev["versions"]
            target = target_for(options.device, versions, options.target)
            ceilings = Ceilings.from_dict(dev["ceilings"]) if "ceilings" in dev else nominal(target)
            if dev.get("ceilings_from_cache"):
                notes.append("ceilings from the cache")
            work = tuple(Work(**w) for w in dev["work"])
            groups = tuple(dev["groups"])
            timings = tuple(t for t in known if t.group in groups) + tuple(Timing(**t) for t in dev["timings"])
            notes += dev["notes"]
        else:
            target = target_for(options.device, {}, options.target)
            off = _call("offline_job", common, options)
            versions, ceilings, timings = {}, nominal(target), ()
            work = tuple(Work(**w) for w in off["work"])
            groups = tuple(off["groups"])
        stat = compiled.result() if compiled else _static_job(common, target, options)
    kernels, static_facts, sass = _static(stat, target, ceilings, notes)
    positions = tuple(
        position(
            next(w for w in work if w.group == t.group),
            roof_for(ceilings, next(w for w in work if w.group == t.group).dtype),
            t.median_ms * 1e-3,
            t.variant,
        )
        for t in timings
        if t.median_ms and any(w.group == t.group for w in work) and ceilings.copy_bytes_per_s
    )
    counters: tuple[ncu_counters.NcuCounters, ...] = ()
    ncu_evidence: tuple[Evidence, ...] = ()
    line_evidence: tuple[Evidence, ...] = ()
    if options.ncu and on_device:
        counters, ncu_evidence, line_evidence = _ncu(common, groups[0], kernels, sass, artifacts, options, notes)
    elif options.ncu:
        notes.append("ncu skipped: no device to profile")
    proton_evidence: tuple[Evidence, ...] = ()
    if options.proton and on_device:
        proton_evidence = _proton(common, kernels, artifacts, options, notes)
    elif options.proton:
        notes.append("proton skipped: no device to profile")
    findings = []
    for group in groups:
        view = _view(
            group,
            task,
            target,
            ceilings,
            work,
            positions,
            kernels,
            static_facts,
            counters if group == groups[0] else (),
            ncu_evidence if group == groups[0] else (),
            line_evidence if group == groups[0] else (),
        )
        found = classify(view)
        if not on_device:
            found = [static_finding(view, target.name)] + found
        findings.append((group, tuple(found)))
    result = ProfileResult(
        task=str(task.reference_path),
        device=options.device,
        timed=on_device,
        target=target.name,
        ceilings=ceilings,
        groups=groups,
        work=work,
        timings=timings,
        positions=positions,
        kernels=tuple(kernels),
        counters=counters,
        evidence=ncu_evidence + line_evidence + proton_evidence,
        findings=tuple(findings),
        notes=tuple(notes),
        versions=tuple(sorted(versions.items())),
    )
    if artifacts is not None:
        result = _write_artifacts(result, artifacts, task.name)
    return result


def _static_job(common: dict, target: Target, options: ProfileOptions) -> dict | str:
    """The offline compile's answer (`static_job`), or why there is none."""
    if not target.can_compile_here:
        return f"{target.name}: no offline compile here, so no static estimate"
    try:
        return _call("static_job", {**common, "target": target.name, "sass": options.ncu}, options)
    except DiagnoseError as exc:
        return f"static estimate unavailable: {exc}"


def _static(stat: dict | str, target: Target, ceilings: Ceilings, notes: list[str]):
    """KernelViews, IR facts per (group, kernel), SASS maps per (group, kernel) from `_static_job`'s answer."""
    if isinstance(stat, str):
        notes.append(stat)
        return [], {}, {}
    notes += [f"offline compile failed: {e}" for e in stat["errors"]]
    hw = hardware(ceilings, target.sm_count) if ceilings.copy_bytes_per_s else None
    kernels, facts, sass = [], {}, {}
    for entry in stat["kernels"]:
        features = _features(dict(entry["features"]))
        loc = Location(**entry["location"]) if entry.get("location") else None
        if hw is None:
            continue
        kernels.append(
            KernelView(
                entry["group"],
                entry["kernel"],
                entry["title"],
                tuple(entry["grid"]) if entry.get("grid") else None,
                loc,
                features,
                estimate(features, hw),
            )
        )
        facts[(entry["group"], entry["kernel"])] = [_evidence(e) for e in entry["facts"]]
        if "sass" in entry:
            sass[(entry["group"], entry["kernel"])] = [
                (off, ins, Location(entry["sass_path"], line) if line else None) for off, ins, line in entry["sass"]
            ]
    return kernels, facts, sass


def _ncu(
    common: dict,
    group: str,
    kernels: list[KernelView],
    sass: dict,
    artifacts: Path | None,
    options: ProfileOptions,
    notes: list[str],
):
    names = sorted({k.kernel for k in kernels if k.group == group})
    folder = artifacts / "ncu" if artifacts else Path(tempfile.mkdtemp(prefix="diagnose-ncu-"))
    payload = {"reference": common["reference"], "candidate": common["candidate"], "device": "cuda", "group": group}
    if not names:
        notes.append("ncu: no kernel launches were captured for the profiled group")
        return (), (), ()
    run = run_ncu(payload, names, folder, options.ncu_timeout_s)
    if run.error:
        notes.append(f"ncu: {run.error} (log: {folder / 'ncu.log'})")
    return read_ncu(run, group, kernels, sass, notes)


def _proton(
    common: dict, kernels: list[KernelView], artifacts: Path | None, options: ProfileOptions, notes: list[str]
) -> tuple[Evidence, ...]:
    """Proton's kernel times per (variant, group) scope as evidence; a failure is a note."""
    folder = artifacts / "proton" if artifacts else Path(tempfile.mkdtemp(prefix="diagnose-proton-"))
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "reference": common["reference"],
        "candidate": common["candidate"],
        "device": "cuda",
        "groups": common["groups"],
        "repeats": options.proton_repeats,
        "out": str(folder / "proton"),
    }
    try:
        ran = _call("proton_job", payload, options)
        tree = json.loads(Path(ran["path"]).read_text())
        rows = proton.parse_hatchet(tree)
    except (DiagnoseError, OSError, ValueError) as exc:
        notes.append(f"proton: {exc}")
        return ()
    if not rows:
        notes.append("proton: no kernel launches were recorded")
    locations = {k.kernel: k.location for k in kernels if k.location}
    return tuple(proton.evidence(proton.scope_times(rows, ran["repeats"]), locations))


def read_ncu(run, group: str, kernels: list[KernelView], sass: dict, notes: list[str]):
    """(counters, counter evidence, per-line evidence) from the pages of one ncu run."""
    found_counters, evidence, lines = [], [], []
    try:
        results = parse_raw_page(run.raw_csv) if run.raw_csv else []
    except Exception as exc:  # noqa: BLE001 - a page we cannot read is a note, the rest still stands
        notes.append(f"ncu: raw page not parsed ({type(exc).__name__}: {exc})")
        results = []
    location = {k.kernel: k.location for k in kernels if k.group == group}
    for result in results:
        c = ncu_counters.counters(result)
        found_counters.append(c)
        evidence += ncu_counters.evidence(c, location.get(result.kernel))
    if run.raw_csv and not results:
        notes.append("ncu: the raw page had no kernel rows")
    for kernel, text in run.source_csv:
        try:
            joined = source_page.join(source_page.parse_source_page(text), sass.get((group, kernel), []))
        except Exception as exc:  # noqa: BLE001
            notes.append(f"ncu: source page of {kernel} not parsed ({type(exc).__name__}: {exc})")
            continue
        if joined.note:
            notes.append(f"ncu source join for {kernel}: {joined.note}")
        lines += source_page.evidence(joined)
    return tuple(found_counters), tuple(evidence), tuple(lines)


def reanalyze(folder: str | Path, task_path: str | Path, pages=None) -> ProfileResult:
    """The analysis of a finished run again, without the device: the measurements from
    `<folder>/<task>.profile.json`, the ncu pages from `pages` (an `NcuRun`) or `<folder>/ncu/`, the
    offline compile redone here (it is deterministic: the same IR and SASS map). For a parser or
    classifier fixed after the run."""
    folder = Path(folder)
    task = load_task(task_path)
    saved = json.loads((folder / f"{task.name}.profile.json").read_text())
    ceilings = Ceilings.from_dict(saved["ceilings"])
    target = lookup(saved["target"])
    work = tuple(Work(**w) for w in saved["work"])
    timings = tuple(Timing(**t) for t in saved["timings"])
    groups = tuple(saved["groups"])
    notes = [n for n in saved["notes"] if not n.startswith("ncu")]
    common = {
        "reference": str(task.reference_path),
        "candidate": str(task.candidate_path),
        "groups": list(groups),
        "cache_root": str(cache_root().resolve()),
    }
    options = ProfileOptions(device=saved["device"], ncu=True, target=target.name)
    kernels, facts, sass = _static(_static_job(common, target, options), target, ceilings, notes)
    positions = tuple(
        position(
            next(w for w in work if w.group == t.group),
            roof_for(ceilings, next(w for w in work if w.group == t.group).dtype),
            t.median_ms * 1e-3,
            t.variant,
        )
        for t in timings
        if t.median_ms
    )
    counters, ncu_evidence, line_evidence = (), (), ()
    if pages is None and (folder / "ncu").is_dir():
        pages = load_run(folder / "ncu")
    if pages is not None:
        counters, ncu_evidence, line_evidence = read_ncu(pages, groups[0], kernels, sass, notes)
    findings = []
    for group in groups:
        first = group == groups[0]
        view = _view(
            group,
            task,
            target,
            ceilings,
            work,
            positions,
            kernels,
            facts,
            counters if first else (),
            ncu_evidence if first else (),
            line_evidence if first else (),
        )
        findings.append((group, tuple(classify(view))))
    return ProfileResult(
        task=str(task.reference_path),
        device=saved["device"],
        timed=saved["timed"],
        target=target.name,
        ceilings=ceilings,
        groups=groups,
        work=work,
        timings=timings,
        positions=positions,
        kernels=tuple(kernels),
        counters=counters,
        evidence=ncu_evidence + line_evidence,
        findings=tuple(findings),
        plots=tuple(saved.get("plots", ())),
        notes=tuple(notes + ["re-analysed offline from the run's saved measurements and ncu pages"]),
        versions=tuple(tuple(v) for v in saved.get("versions", ())),
    )


def _view(
    group, task, target, ceilings, work, positions, kernels, facts, counters, ncu_evidence, line_evidence
) -> GroupView:
    mine = [k for k in kernels if k.group == group]
    location = next((k.location for k in mine if k.location), None) or Location(str(task.candidate_path), 1)
    ir = [e for k in mine for e in facts.get((group, k.kernel), [])]
    return GroupView(
        group=group,
        location=location,
        sm_count=target.sm_count,
        work=next((w for w in work if w.group == group), None),
        position=next((p for p in positions if p.group == group and p.variant == "candidate"), None),
        launch_overhead_s=ceilings.launch_overhead_s,
        features=tuple(k.features for k in mine),
        estimates=tuple(k.estimate for k in mine),
        counters=tuple(counters),
        counter_evidence=tuple(ncu_evidence),
        line_evidence=tuple(line_evidence),
        ir_evidence=tuple(ir),
    )


def _write_artifacts(result: ProfileResult, folder: Path, name: str) -> ProfileResult:
    folder.mkdir(parents=True, exist_ok=True)
    plots: list[str] = []
    points = [(p.variant, p) for p in result.positions]
    if not points:  # nothing timed: plot the estimates, labelled as such
        by_group: dict[str, float] = {}
        for k in result.kernels:
            by_group[k.group] = by_group.get(k.group, 0.0) + k.estimate.time_s
        points = [
            ("candidate (estimate)", position(w, roof_for(result.ceilings, w.dtype), by_group[w.group], "estimate"))
            for w in result.work
            if w.group in by_group and result.ceilings.copy_bytes_per_s
        ]
    if points:
        roof = roof_for(result.ceilings, result.work[0].dtype)
        kind = "measured" if result.timed else "estimated"
        plots = plot_roofline(
            points, roof, folder / f"{name}.roofline", title=f"{name} on {result.ceilings.device} ({kind})"
        )
    result = replace(result, plots=tuple(plots))
    (folder / f"{name}.profile.json").write_text(json.dumps(result.to_dict(), indent=1))
    return result
