"""Controlled recompiles: change one option, compile again, diff the facts.

A symptom seen in one compile (no pipelining, spills, narrow loads, an MMA fallback) is attributed
to an option by recompiling with only that option changed and comparing the facts of the two
compiles field by field: `num_stages` 1 against the launch's own value shows what the pipeliner
bought (buffers, `cp.async`, shared memory, registers); `num_warps` 4 against 8 shows what the
warp count changes (MMA shape, registers, elements per thread). Each difference becomes an
`OptionEffect` evidence (stage `pass`, source `option:<name>`), at the line of the fact.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from diagnose.ir.compile import compile_launch
from diagnose.ir.facts import FactContext, facts_for
from diagnose.ir.specialize import ConcreteLaunch
from diagnose.records import Evidence
from diagnose.targets import Target

# The fields whose change says something; the others (counts of instructions, raw text) follow them.
COMPARED = (
    "bits",
    "engine",
    "mma_versionMajor",
    "pipelined",
    "mechanism",
    "buffers",
    "shared",
    "registers",
    "spill_stores",
    "spill_loads",
    "count",
    "via_shared",
    "total_vgprs",
    "vgpr_spills",
    "occupancy_waves",
    "occupancy_regs",
    "per_thread",
    "async_copies",
    "reason",
)


def default_variants(launch: ConcreteLaunch, record_metadata: dict) -> dict[str, tuple[Any, Any]]:
    """The experiments worth running for a compile: `num_stages` 1 vs its own, `num_warps` 4 vs 8. An
    option named like one of the kernel's parameters is not varied: Triton binds the name to the
    parameter (Liger's neighborhood mask kernel takes both as constexprs)."""
    stages = record_metadata.get("num_stages") or 3
    warps = record_metadata.get("num_warps") or 4
    out = {}
    if stages != 1:
        out["num_stages"] = (1, stages)
    out["num_warps"] = (warps, 8 if warps != 8 else 4)
    params = set(getattr(launch.jit, "arg_names", ()))
    return {option: values for option, values in out.items() if option not in params}


def compare_option(launch: ConcreteLaunch, target: Target, option: str, values: tuple[Any, Any]) -> list[Evidence]:
    """Compile with `option` at each of the two `values` and return the facts that differ."""
    facts = []
    for value in values:
        record = compile_launch(launch, target, options={option: value})
        ctx = FactContext(record, target, launch.grid, launch.jit.fn.__code__.co_filename)
        facts.append({_key(e): e for e in facts_for(ctx)})
    a, b = facts
    out = []
    for key in sorted(set(a) | set(b), key=lambda k: (k[1], k[0], k[2])):
        ea, eb = a.get(key), b.get(key)
        for field in COMPARED:
            va = ea.arg(field) if ea else None
            vb = eb.arg(field) if eb else None
            if va != vb:
                where = (eb or ea).location
                args = (
                    ("option", option),
                    ("values", f"{values[0]} -> {values[1]}"),
                    ("fact", key[0]),
                    ("field", field),
                    ("before", va),
                    ("after", vb),
                )
                out.append(
                    replace(
                        eb or ea,
                        stage="pass",
                        source=f"option:{option}",
                        name="OptionEffect",
                        kind="analysis",
                        location=where,
                        args=args,
                    )
                )
    return out


def _key(e: Evidence) -> tuple[str, int, str]:
    return (e.name, e.location.line if e.location else 0, str(e.arg("access", "")))
