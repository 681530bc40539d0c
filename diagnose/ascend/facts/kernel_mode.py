"""KernelMode: whether the kernel runs on the vector cores alone or needs the cube unit too.

## What it reads
The ttadapter kernel function's attributes:

    func.func @k(...) attributes {..., mix_mode = "aiv", parallel_mode = "simd"}

`mix_mode` is "aiv" for a vector-only kernel, "mix" (or "aic") as soon as it uses `tl.dot`: the
kernel then runs on AI cores, each a cube core with its two vector cores. `parallel_mode` is
"simd", "mix_simd_simt" (950: some accesses run on the SIMT units) or "simt".

## Kinds
`analysis` at the kernel's `def` line with `mix_mode`, `parallel_mode`, `cores` (the unit count a
grid should match on this target: vector cores for "aiv", AI cores otherwise) and
`core_kind`.
"""

from __future__ import annotations

from diagnose.ascend.facts.context import AscendFactContext
from diagnose.records import Evidence


def kernel_mode(ctx: AscendFactContext) -> list[Evidence]:
    attrs = ctx.func_attrs
    if "mix_mode" not in attrs:
        return []
    mixed = ctx.is_mixed
    args = {
        "mix_mode": attrs["mix_mode"],
        "parallel_mode": attrs.get("parallel_mode"),
        "core_kind": "ai_core" if mixed else "vector_core",
        "cores": ctx.target.sm_count if mixed else ctx.target.vector_cores,
    }
    raw = f'mix_mode = "{attrs["mix_mode"]}", parallel_mode = "{attrs.get("parallel_mode")}"'
    return [ctx.evidence("KernelMode", "analysis", "ttadapter", ctx.kernel_location, args, raw)]
