"""Ranking compiled candidates without a device: the profiling layer's static estimate, else a placeholder.

`view(result, target)` turns one file's `static_batch` result into a `StaticView`: did it compile,
the IR facts the launch-config search prunes on (spills, shared memory over the target's limit, the
dot's engine, narrow global accesses), and an estimated time per input group.

The estimate is `diagnose.profiling.static.estimate` (bytes over bandwidth with access-width and
latency efficiency, dot FLOPs over the engine's rate, per-program overhead) against the target's
nominal datasheet ceilings. It is an estimate, labelled so wherever it is shown, used only to rank.
Where a kernel comes without features (the estimate's input), `placeholder_seconds` stands in — a documented
placeholder, not a model: programs over SMs times a per-program cost, plus a penalty for every
narrow access and for a dot off the best engine. Replace it by the profiling estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from diagnose.ir.inspect import evidence_from_dict
from diagnose.profiling.ceilings import nominal
from diagnose.profiling.static.estimate import estimate, hardware
from diagnose.profiling.static.features import Access, KernelFeatures
from diagnose.records import Evidence
from diagnose.scoring import geomean
from diagnose.targets import Target

ESTIMATE = "static estimate (diagnose.profiling; not a measurement)"
PLACEHOLDER = "placeholder ranking (narrow accesses, dot engine, grid size; the profiling estimate was not importable)"
BEST_ENGINE = {"cuda": {80: "mma_v2", 90: "wgmma", 100: "tcgen05"}, "hip": "mfma"}


@dataclass(frozen=True)
class StaticView:
    """What one compiled candidate looks like to the search, per the IR."""

    path: str
    errors: tuple[str, ...]
    seconds: tuple[tuple[str, float], ...]
    spills: int
    shared_over: bool
    engines: tuple[str, ...]
    narrow: int
    label: str

    @property
    def compiled(self) -> bool:
        return not self.errors and bool(self.seconds)

    def time(self) -> float | None:
        """Geometric mean of the per-group estimated times (each group counts the same)."""
        return geomean(s for _, s in self.seconds)


def best_engine(target: Target) -> str | None:
    table = BEST_ENGINE.get(target.backend)
    return table.get(int(target.arch)) if isinstance(table, dict) else table


def view(result: dict, target: Target) -> StaticView:
    per_launch: dict[tuple[str, str], list[tuple[str, float]]] = {}
    spills, shared_over, engines, narrow = 0, False, [], 0
    label = ESTIMATE
    for kernel in result.get("kernels", []):
        facts = [evidence_from_dict(e) for e in kernel.get("facts", [])]
        for e in facts:
            if e.name == "PtxasResources":
                spills += int(e.arg("spill_stores") or 0)
            elif e.name == "SharedMemoryUsage" and int(e.arg("shared") or 0) > target.shared_per_block:
                shared_over = True
            elif e.name == "DotLowering" and e.arg("engine"):
                engines.append(str(e.arg("engine")))
            elif e.name == "GlobalAccessWidth" and e.kind == "missed":
                narrow += 1
        seconds = _estimate(kernel.get("features"), target)
        if seconds is None:
            label = PLACEHOLDER
            seconds = placeholder_seconds(kernel, facts, target)
        per_launch.setdefault((kernel["group"], kernel["kernel"]), []).append((kernel.get("title", ""), seconds))
    per_group: dict[str, float] = {}
    for (group, _), entries in per_launch.items():
        per_group[group] = per_group.get(group, 0.0) + launch_seconds(entries)
    return StaticView(
        result["path"],
        tuple(result.get("errors", ())),
        tuple(sorted(per_group.items())),
        spills,
        shared_over,
        tuple(engines),
        narrow,
        label,
    )


def launch_seconds(entries: list[tuple[str, float]]) -> float:
    """One kernel's time in a forward: its launches add up; an autotuned launch is compiled once per
    config (the titles differ by config) but runs only the best, so its configs count by their minimum."""
    titles = list(dict.fromkeys(t for t, _ in entries))
    if len(titles) == 1:
        return sum(s for _, s in entries)
    best = min(sum(s for t, s in entries if t == title) for title in titles)
    return best


def _estimate(features: dict | None, target: Target) -> float | None:
    if not features:
        return None
    data = dict(features)
    accesses = tuple(Access(**a) for a in data.pop("accesses", ()))
    return estimate(KernelFeatures(**data, accesses=accesses), hardware(nominal(target), target.sm_count)).time_s


def placeholder_seconds(kernel: dict, facts: list[Evidence], target: Target) -> float:
    """A stand-in for the profiling estimate: 1 us per wave of programs, x2 per narrow access, x2 off
    the best dot engine. Monotone in the things the rewrites change, nothing more."""
    grid = kernel.get("grid") or [1]
    waves = math.ceil(math.prod(grid) / max(1, target.sm_count))
    narrow = sum(1 for e in facts if e.name == "GlobalAccessWidth" and e.kind == "missed")
    engine = next((e.arg("engine") for e in facts if e.name == "DotLowering"), None)
    off_engine = engine is not None and engine != best_engine(target)
    return 1e-6 * waves * (2.0**narrow) * (2.0 if off_engine else 1.0)


def gain(base: StaticView, candidate: StaticView) -> float | None:
    """Estimated speedup of `candidate` over `base`: geometric mean over their common groups."""
    mine, theirs = dict(base.seconds), dict(candidate.seconds)
    return geomean(mine[g] / theirs[g] for g in mine if g in theirs and theirs[g] > 0)
