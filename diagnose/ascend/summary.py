"""Per-source-line summary of Ascend IR facts: one short phrase per fact, grouped by line.

The Ascend counterpart of `diagnose.ir.summary`: the same grouping (`LineFacts`), with the
Ascend facts' own phrases. `phrase(evidence)` is the one-line wording.
"""

from __future__ import annotations

from diagnose.ir import summary as ir_summary
from diagnose.records import Evidence


CORES = {"ai_core": "AI cores", "vector_core": "vector cores"}


def _a(e: Evidence, key: str, default="?"):
    value = e.arg(key)
    return default if value is None else value


def phrase(e: Evidence) -> str:
    """A short, plain phrase for one Ascend fact."""
    name = e.name
    if name == "KernelMode":
        what = "vector-only kernel" if _a(e, "mix_mode") == "aiv" else "cube + vector kernel"
        return f"{what} (mix_mode {_a(e, 'mix_mode')}, {_a(e, 'parallel_mode')}): {_a(e, 'cores')} {CORES.get(e.arg('core_kind'), 'cores')}"
    if name == "LaunchGrid":
        base = f"grid {_a(e, 'grid')}: {_a(e, 'programs')} programs on {_a(e, 'cores')} {CORES.get(e.arg('core_kind'), 'cores')}"
        if e.arg("over_limit"):
            return base + f", over the {e.arg('over_limit')} limit"
        if e.kind == "missed":
            return base + f", {_a(e, 'rounds')} rounds"
        if e.arg("idle_cores"):
            return base + f", {e.arg('idle_cores')} idle"
        return base
    if name == "ScalarizedAccess":
        index = "index loaded from memory" if e.arg("index") == "loaded" else "index computed"
        return f"{_a(e, 'access')} scalarized: a loop of {_a(e, 'elements')} single {_a(e, 'dtype')} elements ({index})"
    if name == "StructuredAccess":
        masked = ", masked" if e.arg("masked") else ""
        return f"{_a(e, 'access')} {_a(e, 'shape')}x{_a(e, 'dtype')} block, strides {_a(e, 'strides')} ({_a(e, 'bytes')} B{masked})"
    if name == "IndirectAccess":
        if e.arg("via") == "ub_gather":
            return f"tl.gather in UB from {_a(e, 'source')} ({_a(e, 'elements')} elements)"
        return f"{_a(e, 'access')} on the SIMT units: {_a(e, 'elements')} {_a(e, 'dtype')} lanes"
    if name == "MaskedLoadPadding":
        return f"padding fill of {_a(e, 'buffer')} ({_a(e, 'bytes')} B, value {_a(e, 'fill')}) before the copy"
    if name == "CubeMatmul":
        return f"dot on the cube: {_a(e, 'm')}x{_a(e, 'n')}x{_a(e, 'k')} {_a(e, 'in_dtype')} -> {_a(e, 'acc_dtype')} ({_a(e, 'precision')})"
    if name == "Int64Arithmetic":
        loop = f", {e.arg('in_scalar_loop')} per element in a scalar loop" if e.arg("in_scalar_loop") else ""
        return f"64-bit integer ops: {_a(e, 'vector_ops')} vector, {_a(e, 'scalar_ops')} scalar{loop}"
    if name == "UBFootprint":
        doubled = f" ({e.arg('peak_bytes_multibuffered')} B multibuffered)" if e.arg("peak_bytes_multibuffered") else ""
        return (
            f"UB estimate {_a(e, 'peak_bytes')} B{doubled} of {_a(e, 'ub_bytes')} B: "
            f"{_a(e, 'live_buffers')} live buffers, largest {_a(e, 'largest')}"
        )
    if name == "UBAllocated":
        return f"bishengir allocated {_a(e, 'required_bytes')} B of {_a(e, 'ub_bytes')} B UB"
    if name == "PassIntroduced":
        via = f" (in its {e.arg('via')})" if e.arg("via") else ""
        return f"{_a(e, 'marker')} introduced by {_a(e, 'pass')}{via}"
    return ", ".join(f"{k}={v}" for k, v in e.args)


def line_summary(evidence: list[Evidence]) -> list[dict]:
    """The Ascend facts grouped by source line, as `diagnose.ir.summary.line_summary` gives them."""
    return ir_summary.line_summary(evidence, phrase)
