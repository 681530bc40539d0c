"""LayoutConversion: every `ttg.convert_layout` left in the TTGIR, where it comes from, what it costs.

## What it reads
The final TTGIR (after `tritongpu-remove-layout-conversions` and the other layout passes) and the
module right after shared-memory allocation, where a conversion that goes through shared memory
carries `allocation.offset`. One `analysis` record per conversion, at the user line of the op
(usually the `tl.store`, `tl.dot` or reduction that needs the other layout), plus one `metric`
record `LayoutConversions` with the count at the kernel's `def` line (0 when there are none).

## Arguments
`from`/`to` layouts (their TTGIR names), `tensor_bytes`, `via_shared` (whether it was given
scratch), and `scratch_bytes`: an estimate, the tensor's bytes when it goes through shared memory
and 0 otherwise (Triton pads and may split the exchange, so the real scratch can differ; the
kernel's total is `metadata.shared`).
"""

from __future__ import annotations

import re

from diagnose.ir.facts.context import FactContext, tensor_type
from diagnose.ir.sourcemap import parse_mlir_ops
from diagnose.records import Evidence

# %4 = ttg.convert_layout %y {allocation.offset = 0 : i32} : tensor<64x64xf32, #blocked1> -> tensor<64x64xf32, #blocked>
CONVERT = re.compile(
    r":\s*tensor<[^,]+,\s*(?P<src>#[\w.]+(?:<\{.*?\}>)?)>\s*->\s*tensor<[^,]+,\s*(?P<dst>#[\w.]+(?:<\{.*?\}>)?)>"
)


def layout_conversions(ctx: FactContext) -> list[Evidence]:
    allocated = [op for op in parse_mlir_ops(ctx.record.allocated_ir()) if op.name == "ttg.convert_layout"]
    converts = [op for op in ctx.ops("ttgir") if op.name == "ttg.convert_layout"]
    out = [ctx.evidence("LayoutConversions", "metric", "ttgir", ctx.kernel_location, {"count": len(converts)}, None)]
    for i, op in enumerate(converts):
        ttype = tensor_type(op.raw)
        nbytes = ttype.numel * ttype.elem_bits // 8 if ttype else None
        twin = allocated[i] if i < len(allocated) and allocated[i].location == op.location else None
        via_shared = bool(twin and "allocation.offset" in twin.raw)
        m = CONVERT.search(op.raw)
        args = {
            "from": m["src"] if m else None,
            "to": m["dst"] if m else None,
            "tensor_bytes": nbytes,
            "via_shared": via_shared,
            "scratch_bytes": nbytes if via_shared else 0,
        }
        out.append(ctx.evidence("LayoutConversion", "analysis", "ttgir", op.location, args, op.raw))
    return out
