"""Per-source-line summary of IR facts: one short phrase per fact, grouped by line.

What the text table, the LSP's hovers and the agent read: `summarize(evidence)` gives a
`LineFacts` per (file, line), missed facts first; `phrase(evidence)` is the one-line wording.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from diagnose.records import Evidence


@dataclass(frozen=True)
class LineFacts:
    """The facts of one source line, as phrases, split by kind."""

    path: str
    line: int
    missed: tuple[str, ...] = ()
    passed: tuple[str, ...] = ()
    other: tuple[str, ...] = ()


def _a(e: Evidence, key: str, default="?"):
    value = e.arg(key)
    return default if value is None else value


def phrase(e: Evidence) -> str:
    """A short, plain phrase for one fact."""
    name = e.name
    if name == "GlobalAccessWidth":
        bits = _a(e, "bits")
        width = "TMA" if bits == "tma" else f"{bits}-bit"
        why = (
            f" ({e.arg('reason')}: {e.arg('detail')})"
            if e.arg("detail")
            else f" ({e.arg('reason')})"
            if e.arg("reason")
            else ""
        )
        count = e.arg("widths") or f"{width} x{_a(e, 'instructions')}"
        return f"{_a(e, 'access')} {count}{why}"
    if name == "DotLowering":
        base = f"dot -> {_a(e, 'engine')}"
        if e.arg("mma_instrShape"):
            base += f" {e.arg('mma_instrShape')}"
        return base + (f", not {e.arg('best')}: {e.arg('reason')}" if e.kind == "missed" else "")
    if name == "LayoutConversion":
        via = f", {e.arg('scratch_bytes')} B via shared" if e.arg("via_shared") else ""
        return f"convert_layout {_a(e, 'from')} -> {_a(e, 'to')}{via}"
    if name == "LayoutConversions":
        return f"{_a(e, 'count')} layout conversions"
    if name == "SoftwarePipelining":
        if e.arg("pipelined"):
            return f"loop pipelined: {_a(e, 'mechanism')}, {_a(e, 'buffers', 1)} buffers, {_a(e, 'shared_per_stage', 0)} B/stage"
        return "loop not pipelined" + (f": {e.arg('reason')}" if e.arg("reason") else "")
    if name == "PtxasResources":
        return f"{_a(e, 'registers')} registers, {_a(e, 'spill_stores')} B spill stores, {_a(e, 'stack_frame')} B stack"
    if name == "RegisterSpill":
        return f"register spills: {_a(e, 'spill_stores', _a(e, 'vgpr_spills'))} stores"
    if name == "AmdgcnResources":
        return f"{_a(e, 'total_vgprs')} VGPRs ({_a(e, 'agprs', 0)} AGPR), {_a(e, 'sgprs')} SGPRs, occupancy {_a(e, 'occupancy_waves')}"
    if name == "SharedMemoryUsage":
        return f"shared memory {_a(e, 'shared')} B of {_a(e, 'limit')}"
    if name == "SharedMemoryOverLimit":
        return f"shared memory {_a(e, 'shared')} B over the {_a(e, 'limit')} B limit"
    if name == "Int64IndexArithmetic":
        return f"64-bit index arithmetic ({_a(e, 'ops')} ops, from {_a(e, 'origin')})"
    if name == "LaunchShape":
        return f"grid {_a(e, 'grid')}: {_a(e, 'programs')} programs on {_a(e, 'sm_count')} SMs"
    if name in ("CompilerRemark", "CompilerWarning"):
        return f"{e.source}: {_a(e, 'message')}"
    if name == "OptionEffect":
        return f"{_a(e, 'option')} {_a(e, 'values')}: {_a(e, 'fact')}.{_a(e, 'field')} {e.arg('before')} -> {e.arg('after')}"
    return ", ".join(f"{k}={v}" for k, v in e.args)


def summarize(evidence: list[Evidence], wording: Callable[[Evidence], str] = phrase) -> list[LineFacts]:
    """Facts grouped by (file, line), in line order; `wording` phrases each (Ascend passes its own)."""
    groups: dict[tuple[str, int], dict[str, list[str]]] = {}
    for e in evidence:
        if e.location is None:
            continue
        g = groups.setdefault((e.location.path, e.location.line), {"missed": [], "passed": [], "other": []})
        bucket = e.kind if e.kind in ("missed", "passed") else "other"
        text = wording(e)
        if text not in g[bucket]:
            g[bucket].append(text)
    return [
        LineFacts(path, line, tuple(g["missed"]), tuple(g["passed"]), tuple(g["other"]))
        for (path, line), g in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]


def line_summary(evidence: list[Evidence], wording: Callable[[Evidence], str] = phrase) -> list[dict]:
    """`summarize` as JSON-able dicts."""
    return [
        {"path": f.path, "line": f.line, "missed": list(f.missed), "passed": list(f.passed), "other": list(f.other)}
        for f in summarize(evidence, wording)
    ]
