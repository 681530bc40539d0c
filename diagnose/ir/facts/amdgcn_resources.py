"""AmdgcnResources: VGPRs, AGPRs, SGPRs, spills, scratch and occupancy from the AMDGCN assembly.

## What it reads
The comments and the AMDHSA metadata the AMDGPU backend writes into the `.amdgcn` text::

    ; NumVgprs: 142        ; NumAgprs: 64        ; TotalNumVgprs: 208      ; ScratchSize: 0
    ; Occupancy: 2         .sgpr_count: 34       .vgpr_spill_count: 0      .sgpr_spill_count: 0

## Kinds
A `metric` record `AmdgcnResources` at the kernel's `def` line; a `missed` record `RegisterSpill`
when VGPRs or SGPRs were spilled (scratch memory). `Occupancy` is waves per SIMD as the backend
computed it from registers alone: the LDS the kernel needs is dynamic (`metadata.shared`) and is
not in it, see `SharedMemoryUsage`.
"""

from __future__ import annotations

import re

from diagnose.ir.facts.context import FactContext
from diagnose.records import Evidence

# ; NumVgprs: 142      ; TotalNumVgprs: 208      ; Occupancy: 2
COMMENT_VALUE = re.compile(
    r"^\s*;\s*(NumVgprs|NumAgprs|TotalNumVgprs|NumSgprs|TotalNumSgprs|ScratchSize|Occupancy):\s*(\d+)", re.MULTILINE
)
#     .vgpr_spill_count: 0
META_VALUE = re.compile(
    r"^\s*\.(sgpr_count|vgpr_count|sgpr_spill_count|vgpr_spill_count|private_segment_fixed_size):\s*(\d+)", re.MULTILINE
)
NAMES = {
    "NumVgprs": "vgprs",
    "NumAgprs": "agprs",
    "TotalNumVgprs": "total_vgprs",
    "TotalNumSgprs": "sgprs",
    "NumSgprs": "sgprs",
    "ScratchSize": "scratch_bytes",
    "Occupancy": "occupancy_waves",
    "sgpr_spill_count": "sgpr_spills",
    "vgpr_spill_count": "vgpr_spills",
}


def amdgcn_resources(ctx: FactContext) -> list[Evidence]:
    text = ctx.text("amdgcn")
    values: dict[str, int] = {}
    for m in list(COMMENT_VALUE.finditer(text)) + list(META_VALUE.finditer(text)):
        key = NAMES.get(m[1])
        if key and key not in values:
            values[key] = int(m[2])
    if not values:
        return []
    raw = next((line.strip() for line in text.splitlines() if "; Occupancy:" in line), None)
    out = [ctx.evidence("AmdgcnResources", "metric", "amdgcn", ctx.kernel_location, values, raw)]
    if values.get("vgpr_spills") or values.get("sgpr_spills"):
        spill = {k: values.get(k) for k in ("total_vgprs", "vgpr_spills", "sgpr_spills", "scratch_bytes")}
        raw = next((line.strip() for line in text.splitlines() if ".vgpr_spill_count" in line), None)
        out.append(ctx.evidence("RegisterSpill", "missed", "amdgcn", ctx.kernel_location, spill, raw))
    return out
