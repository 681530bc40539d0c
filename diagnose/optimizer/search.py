"""Launch-config search: enumerate, prune on IR facts before running anything, then time or estimate.

For a tunable rewrite (`retune-launch`, `wgmma-tiles`, `add-autotune`, `extend-autotune`) and a source it
applies to:

1. **enumerate** the rewrite's `search_space` (block sizes, tile shapes, num_warps, num_stages) and
   drop, before compiling, what cannot be good on the target: tiles whose A and B stages overflow
   shared memory even at 2 bytes per element, and on sm_90 tiles that cannot use wgmma
   (M per warpgroup below 64, fewer than 4 warps);
2. **compile** every remaining configuration offline for the target (its whole rewritten task file,
   launches captured on the device-sized input groups), in parallel: several `static_batch` workers
   through `diagnose.runtime.runner.call`;
3. **prune on IR facts**: a compile error, register spills, shared memory over the target's limit,
   the dot off the target's best engine when another configuration reaches it, more narrow global
   accesses than the best configuration has;
4. **rank** the survivors: timed with the harness where a device is here (`verify` on the device,
   the candidate's median per group, the fastest `top_k` by estimate only); otherwise by the static
   estimate (`ranking.py`), and the result says so.

A search space whose first configuration is empty (`extend-autotune`'s) starts from a baseline: the
source as it is, compiled and ranked (and timed, where a device is here) beside the others, kept
through IR pruning, and what the others must beat by the tie margin.

A rewrite whose values no estimate can rank (`estimated = False`: `launch-options`' warps and stages)
is searched only where a device times it: its first `timed_configs` survivors in the order of its
search space, the current values among them (the unchanged source), timed side by side in one worker
(they compute the same values, so only the one chosen is verified, afterwards, like any candidate), and
another configuration is chosen only when it beats the first by more than `MEASURED_TIE`. With no
device, its current values are kept and the result says why.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose import __version__
from diagnose.optimizer import ranking
from diagnose.rewrite.rewrite import NotApplicable, Rewrite, RewriteContext
from diagnose.runtime.runner import call
from diagnose.runtime.devices import timed
from diagnose.scoring import geomean
from diagnose.targets import Target
from diagnose.task import load_task
from diagnose.toolchain.placement import available
from diagnose.verify.harness import CheckOptions, prepared, verify
from diagnose.verify.side_by_side import time_side_by_side

ENTRY = "diagnose.optimizer.jobs:static_batch"
TIMEOUT_S = 900.0
TIMED_TOP_K = 4
# Estimated times this close count as equal (the model's resolution, not the device's).
ESTIMATE_TIE = 0.02
# A measured gain this small is not worth a source edit (and within a kernel's run-to-run spread).
MEASURED_TIE = 0.02


@dataclass(frozen=True)
class Trial:
    """One configuration: its values and what became of it."""

    values: tuple[tuple[str, int], ...]
    pruned: str | None = None
    seconds: float | None = None
    measured: bool = False

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values) or "the source as it is"


# `SearchResult.summary()` read back: the rewrite, the number of configurations, the ranking, the chosen values.
SUMMARY = re.compile(
    r"(?P<rewrite>[\w-]+): (?P<configs>\d+) configs, \d+ after IR pruning, ranked by (?P<how>.+?); "
    r"chose (?P<chose>\w+=\w+(?:, \w+=\w+)*)"
)


@dataclass(frozen=True)
class SearchResult:
    """The configuration chosen for one rewrite, every trial, and how they were ranked."""

    rewrite: str
    chosen: tuple[tuple[str, int], ...]
    trials: tuple[Trial, ...]
    ranked_by: str

    def table(self) -> tuple[str, ...]:
        """The summary, then one line per configuration: the measured config table of a report."""
        rows = []
        for t in self.trials:
            how = "measured" if t.measured else "estimated"
            time = f"{t.seconds * 1e3:.4g} ms {how}" if t.seconds not in (None, math.inf) else "not timed"
            rows.append(f"  {t.label()}: {('dropped: ' + t.pruned) if t.pruned else time}")
        return (self.summary(), *rows)

    def summary(self) -> str:
        """One line; `SUMMARY` reads it back (a sweep row's reason quotes a search that kept the source's values)."""
        kept = sum(1 for t in self.trials if t.pruned is None)
        return (
            f"{self.rewrite}: {len(self.trials)} configs, {kept} after IR pruning, ranked by {self.ranked_by}; "
            f"chose {', '.join(f'{k}={v}' for k, v in self.chosen) or 'the source as it is'}"
        )


@dataclass(frozen=True)
class SearchOptions:
    """Where the task is (its reference), the device to time on (and its lock), parallel workers, the cache."""

    task_path: str
    device: str = "cpu"
    workers: int | None = None
    cache_root: str | None = None
    top_k: int = TIMED_TOP_K
    # The lock file of a device shared with other runs: every timing holds it (`runtime.device_lock`).
    device_lock: str | None = None


def static_prune(values: dict[str, int], target: Target) -> str | None:
    """Why a configuration is not worth compiling on `target`, or None."""
    tiles = [k for k in values if k not in ("num_warps", "num_stages", "GROUP_M")]
    warps, stages = values.get("num_warps", 4), values.get("num_stages", 1)
    if len(tiles) == 3:  # a dot's M, N, K
        m, n, k = (values[t] for t in tiles)
        shared = (m * k + k * n) * 2 * max(1, stages)
        if target.backend != "npu" and shared > target.shared_per_block:
            return f"A+B stages need {shared} B of shared memory, over {target.shared_per_block}"
        if target.is_nvidia and int(target.arch) == 90 and (warps < 4 or m // max(1, warps // 4) < 64):
            return "wgmma needs M >= 64 per warpgroup and 4+ warps"
    return None


def compile_batch(
    task_path: str, paths: list[str], target: Target, workers: int | None, cache_root: str | None
) -> dict[str, dict]:
    """`static_batch` over `paths`, split across parallel workers: path -> result."""
    if not paths:
        return {}
    count = max(1, min(len(paths), workers or os.cpu_count() or 1))
    chunks = [paths[i::count] for i in range(count)]

    def run(chunk: list[str]) -> list[dict]:
        payload = {
            "reference": str(Path(task_path).resolve()),
            "candidates": chunk,
            "target": target.name,
            "cache_root": cache_root,
            "groups": None,
        }
        result = call(ENTRY, payload, timeout_s=TIMEOUT_S, memory_limit=16 * 2**30)
        if not result.ok:
            return [
                {"path": p, "kernels": [], "errors": [f"{result.failure.kind}: {result.failure.message}"]}
                for p in chunk
            ]
        return result.value["results"]

    with ThreadPoolExecutor(max_workers=count) as pool:
        out = {}
        for results in pool.map(run, chunks):
            out.update({r["path"]: r for r in results})
    return out


def ir_prune(
    views: dict[int, ranking.StaticView], target: Target, measured: bool = False, baseline: bool = False
) -> dict[int, str | None]:
    """Why each compiled configuration is dropped (None: kept), comparing them with each other. For a
    rewrite chosen by timing only (`measured`), only what cannot run well is dropped (a compile error,
    spills, shared memory over the limit), never the current values (index 0) that compile: the
    timing decides the rest. With a `baseline` (index 0 is the source as it is) that is kept too, and
    spills count beyond its own (an autotuned launch compiles every config: the authors' spills are in
    every trial); narrow accesses are left to the estimate, which weighs them by the bytes they move
    (the counts mix the authors' configs with the new one, and a row reduction's one-value store is
    narrow in every config: counting it pruned FlagGems' mean_dim's best estimate)."""
    reasons: dict[int, str | None] = {}
    best = ranking.best_engine(target)
    reaches_best = any(best in v.engines for v in views.values() if v.compiled)
    fewest_narrow = min((v.narrow for v in views.values() if v.compiled), default=0)
    for i, v in views.items():
        if not v.compiled:
            reasons[i] = "does not compile: " + (v.errors[0] if v.errors else "no launch captured")
        elif (measured or baseline) and i == 0:
            reasons[i] = None  # the current values: what the timing compares against
        elif v.spills > (views[0].spills if baseline and 0 in views else 0):
            reasons[i] = f"spills ({v.spills} B of spill stores)"
        elif v.shared_over:
            reasons[i] = "shared memory over the target's limit"
        elif measured:
            reasons[i] = None
        elif reaches_best and v.engines and best not in v.engines:
            reasons[i] = f"tl.dot lowered to {'/'.join(v.engines)}, not {best}"
        elif v.narrow > fewest_narrow and not baseline:
            reasons[i] = f"{v.narrow} narrow global accesses (another config has {fewest_narrow})"
        else:
            reasons[i] = None
    return reasons


def search(rewrite: Rewrite, ctx: RewriteContext, plan: Any, options: SearchOptions) -> SearchResult:
    """Choose the launch values of `rewrite` on `ctx` (see the module docstring), or the result of the
    same search done before: cached under `<cache>/search/` by the rewrite, the source, the task file
    (its inputs' shapes), the device and the target. A run that escalates proposes again at each
    level, and a configuration timed once on this device need not be timed again."""
    space = rewrite.search_space(ctx, plan)
    folder = Path(options.cache_root, "search") if options.cache_root else None

    key = hashlib.sha256(
        json.dumps(
            [__version__, rewrite.id, ctx.source, _text(options.task_path), options.device, ctx.target.name, space],
            default=str,
        ).encode()
    ).hexdigest()[:24]
    if folder is not None and (folder / f"{key}.json").is_file():
        try:
            return _loaded(json.loads((folder / f"{key}.json").read_text()))
        except (ValueError, KeyError, TypeError):
            pass  # a damaged entry is searched again
    result = _search(rewrite, ctx, plan, options, space)
    if folder is not None and any(t.seconds is not None for t in result.trials) and "failed" not in result.ranked_by:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{key}.json").write_text(json.dumps(dataclasses.asdict(result)))
    return result


def _text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _loaded(data: dict) -> SearchResult:
    trials = tuple(
        Trial(tuple(tuple(v) for v in t["values"]), t["pruned"], t["seconds"], t["measured"]) for t in data["trials"]
    )
    return SearchResult(
        data["rewrite"], tuple(tuple(v) for v in data["chosen"]), trials, f"{data['ranked_by']}; from the search cache"
    )


def _search(
    rewrite: Rewrite, ctx: RewriteContext, plan: Any, options: SearchOptions, space: list[dict[str, Any]]
) -> SearchResult:
    if not space:
        return SearchResult(rewrite.id, (), (), "nothing to search")
    default = tuple(space[0].items())

    can_time = timed(options.device) and available(options.device)[0]
    if not rewrite.estimated and not can_time:
        return SearchResult(
            rewrite.id,
            default,
            (Trial(default),),
            f"the current values ({rewrite.id} is chosen by timing only; nothing is timed on {options.device})",
        )
    if not ctx.target.can_compile_here:
        return SearchResult(
            rewrite.id,
            default,
            (Trial(default),),
            f"the default ({ctx.target.name} does not compile here, so nothing was pruned or ranked)",
        )
    # an empty first configuration is the source as it is: what the others must beat (extend-autotune's
    # trials each add one config to the authors', so its baseline is their configs alone)
    baseline = not space[0]
    trials: list[Trial] = []
    sources: dict[int, str] = {}
    for i, values in enumerate(space):
        why = static_prune(values, ctx.target)
        if why is None and not values:
            sources[i] = ctx.source
        elif why is None:
            try:
                sources[i] = rewrite.apply(ctx.with_params(values))
            except NotApplicable as exc:
                if i == 0 and not rewrite.estimated:
                    sources[i] = ctx.source  # the current values, what another configuration must beat
                else:
                    why = str(exc)
        trials.append(Trial(tuple(values.items()), pruned=why))
    with tempfile.TemporaryDirectory(prefix="diagnose-search-") as folder:
        stem = Path(ctx.path).stem.replace(".", "_")
        paths = {}
        for i, text in sources.items():
            path = Path(folder, f"{stem}_cfg{i:02d}.py")
            path.write_text(text)
            paths[i] = str(path)
        results = compile_batch(
            options.task_path, list(paths.values()), ctx.target, options.workers, options.cache_root
        )
        views = {i: ranking.view(results[p], ctx.target) for i, p in paths.items() if p in results}
        reasons = ir_prune(views, ctx.target, measured=not rewrite.estimated, baseline=baseline)
        for i, why in reasons.items():
            trials[i] = Trial(trials[i].values, pruned=why, seconds=views[i].time())
        survivors = [i for i, why in reasons.items() if why is None]
        ranked_by = next((v.label for v in views.values()), ranking.ESTIMATE)
        if survivors and can_time:
            top_k = rewrite.timed_configs or options.top_k
            survivors = (
                sorted(survivors)[:top_k]
                if not rewrite.estimated
                else sorted(survivors, key=lambda i: trials[i].seconds or math.inf)[:top_k]
            )
            if baseline and reasons.get(0, "") is None and 0 not in survivors:
                survivors = [0, *survivors[: top_k - 1]]  # the baseline is timed too: the others must beat it

            # One reference job for every configuration timed.
            with prepared(load_task(options.task_path, paths[survivors[0]]), _check_options(options)) as reference:
                if not rewrite.estimated:
                    seconds, failed = _side_by_side(options, {i: paths[i] for i in survivors}, reference)
                    if failed:
                        return SearchResult(
                            rewrite.id, default, tuple(trials), f"the current values (timing failed: {failed})"
                        )
                for i in survivors:
                    timed_s = seconds[i] if not rewrite.estimated else _timed(options, paths[i], reference)
                    trials[i] = Trial(trials[i].values, seconds=timed_s, measured=True)
            ranked_by = (
                f"time on {options.device} (harness medians; the first {top_k} of the search space)"
                if not rewrite.estimated
                else f"time on {options.device} (harness medians; top {top_k} by estimate)"
            )
    if not survivors:
        return SearchResult(rewrite.id, default, tuple(trials), "the default (no configuration survived pruning)")
    return SearchResult(rewrite.id, trials[pick(trials, survivors)].values, tuple(trials), ranked_by)


def pick(trials: list[Trial], survivors: list[int]) -> int:
    """The fastest survivor; within `ESTIMATE_TIE` of it an estimate cannot tell configurations apart,
    within `MEASURED_TIE` a gain is not worth an edit, so the earliest in the search space (the
    rewrite's preference order, its current values first where they are searched) wins."""
    fastest = min(trials[i].seconds if trials[i].seconds is not None else math.inf for i in survivors)
    tie = MEASURED_TIE if any(trials[i].measured for i in survivors) else ESTIMATE_TIE
    return min(
        i
        for i in survivors
        if (trials[i].seconds if trials[i].seconds is not None else math.inf) <= fastest * (1 + tie)
    )


def _check_options(options: SearchOptions):
    return CheckOptions(device=options.device, seeds=(0,), baselines=(), device_lock=options.device_lock)


def _side_by_side(options: SearchOptions, paths: dict[int, str], reference) -> tuple[dict[int, float], str | None]:
    """Geometric mean over the groups of each configuration's median, all timed in one worker
    (`diagnose.verify.side_by_side`: the configurations of a rewrite that is not `estimated` compute
    the same values, so only the one chosen needs verifying)."""
    timings, failed = time_side_by_side(reference, {str(i): Path(p) for i, p in paths.items()}, _check_options(options))
    out = {}
    for i in paths:
        medians = [t.median_ms for t in timings if t.variant == str(i) and t.median_ms]
        out[i] = geomean(medians) * 1e-3 if medians else math.inf
    return out, failed


def _timed(options: SearchOptions, path: str, reference=None) -> float | None:
    """Geometric mean of the candidate's median times over the device groups, from the harness."""
    verdict = verify(load_task(options.task_path, path), _check_options(options), reference)
    medians = [t.median_ms for t in verdict.timings if t.variant == "candidate" and t.median_ms]
    if not verdict.passed or not medians:
        return math.inf
    return geomean(medians) * 1e-3
