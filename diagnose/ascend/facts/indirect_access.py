"""IndirectAccess: unstructured accesses that kept a vector form: SIMT calls and UB gathers.

## What it reads
ttadapter calls to the runtime's access templates:

    %18 = call @triton_indirect_load(%arg2, %17, %8, %1) : (memref<?xf32>, tensor<1024xi64>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
    %4 = call @triton_gather(%1, %3, %c0_i32) : (tensor<256xf32>, tensor<128xi32>, i32) -> tensor<128xf32>

`triton_indirect_load` / `triton_indirect_store` come from the 950's `compile_mode=
"unstructured_in_simt"`: the access runs on the SIMT units, one lane per element, reading global
memory directly (`parallel_mode = "mix_simd_simt"`). `triton_gather` is `tl.gather` on a tensor
already in the unified buffer: the selection happens in UB after one contiguous load.

## Kinds
`analysis` for SIMT accesses (`via=simt`, `access`, `elements`, `dtype`): an indirect access that
did not become a scalar loop, but whose cost per element is still the SIMT path's; `passed` for UB
gathers (`via=ub_gather`, `source`: the gathered tensor's shape, `elements`).
"""

from __future__ import annotations

from diagnose.ascend.facts.context import AscendFactContext, shaped_types
from diagnose.records import Evidence

SIMT = {"triton_indirect_load": "load", "triton_indirect_store": "store"}
GATHER = "triton_gather"


def indirect_access(ctx: AscendFactContext) -> list[Evidence]:
    out = []
    for call in ctx.calls:
        if call.callee not in SIMT and call.callee != GATHER:
            continue
        signature = call.line.rsplit(" : ", 1)[-1]
        inputs, _, results = signature.partition("->")
        types = shaped_types(inputs)
        result = (shaped_types(results) or [None])[-1]
        if call.callee == GATHER:
            source = types[0] if types else None
            args = {
                "via": "ub_gather",
                "source": str(source) if source else None,
                "elements": result.numel if result else None,
                "dtype": result.elem if result else None,
            }
            out.append(ctx.evidence("IndirectAccess", "passed", "ttadapter", call.location, args, call.line))
            continue
        # load: (memref, offsets, mask, other) -> values; store: (memref, offsets, values, mask)
        values = result if SIMT[call.callee] == "load" else (types[2] if len(types) > 2 else None)
        args = {
            "via": "simt",
            "access": SIMT[call.callee],
            "elements": values.numel if values else None,
            "dtype": values.elem if values else None,
        }
        out.append(ctx.evidence("IndirectAccess", "analysis", "ttadapter", call.location, args, call.line))
    return out
