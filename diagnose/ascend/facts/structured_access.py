"""StructuredAccess: loads and stores that stayed block transfers, with their shape and strides.

## What it reads
ttadapter `memref.reinterpret_cast` ops outside the scalar loops of `ScalarizedAccess`: the
block of global memory one access touches, as a shape and a stride per axis,

    %reinterpret_cast = memref.reinterpret_cast %arg2 to offset: [%3], sizes: [16, 128], strides: [%2, 1]
        : memref<?xf32> to memref<16x128xf32, strided<[?, 1], offset: ?>>

and what consumes it: a `memref.copy` from it is a load (GM -> UB, one MTE2 transfer), a
`bufferization.materialize_in_destination` into it a store (UB -> GM); either may go through a
`memref.subview` whose dynamic size is the masked tail (`masked=True`).

## Kinds
`passed` for a transfer whose innermost stride is 1 (contiguous rows); `analysis` for a strided
one (`strides: [%S]`: a strided DMA, whose cost the profile decides). Arguments: `access`,
`shape` (`16x128`), `strides` (`[stride_row, 1]`, kernel parameters by name), `dtype`, `bytes`
(the whole block), `masked`.
"""

from __future__ import annotations

import re

from diagnose.ascend.facts.context import AscendFactContext, result_type
from diagnose.records import Evidence

# ... sizes: [16, 128], strides: [%2, 1] : ...
SIZES_STRIDES = re.compile(r"sizes: \[(?P<sizes>[^\]]*)\], strides: \[(?P<strides>[^\]]*)\]")


def structured_access(ctx: AscendFactContext) -> list[Evidence]:
    ops = ctx.ops()
    users: dict[str, list] = {}
    for op in ops:
        for v in op.operands:
            users.setdefault(v, []).append(op)
    out = []
    for cast in ops:
        if cast.name != "memref.reinterpret_cast" or not cast.results:
            continue
        line = ctx.line(cast)
        m = SIZES_STRIDES.search(line)
        if not m or all(s.strip() == "1" for s in m["sizes"].split(",")):
            continue  # a single element: the body of a scalar loop (ScalarizedAccess)
        access, masked = _use(ctx, cast.results[0], users)
        block = result_type(line)
        strides = [_name(ctx, s.strip()) for s in m["strides"].split(",")]
        args = {
            "access": access,
            "shape": "x".join(s.strip() for s in m["sizes"].split(",")),
            "strides": "[" + ", ".join(strides) + "]",
            "dtype": block.elem if block else None,
            "bytes": block.nbytes if block else None,
            "masked": masked,
        }
        kind = "passed" if strides[-1] == "1" else "analysis"
        out.append(ctx.evidence("StructuredAccess", kind, "ttadapter", cast.location, args, line))
    return out


def _name(ctx: AscendFactContext, operand: str) -> str:
    return ctx.value_name(operand) if operand.startswith("%") else operand


def _use(ctx: AscendFactContext, value: str, users: dict[str, list]) -> tuple[str, bool]:
    """("load" | "store" | "other", masked): how the block is consumed, looking through subviews."""
    masked = False
    frontier = [value]
    for _ in range(4):
        following = []
        for v in frontier:
            for op in users.get(v, []):
                if op.name == "memref.copy":
                    return ("load" if op.operands and op.operands[0] == v else "store"), masked
                if op.name == "bufferization.materialize_in_destination":
                    return "store", masked
                if op.name == "memref.subview":
                    masked = masked or "%" in ctx.line(op).split("]", 1)[-1].split(":", 1)[0]
                    following += list(op.results)
        frontier = following
    return "other", masked
