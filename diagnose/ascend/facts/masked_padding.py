"""MaskedLoadPadding: masked loads that fill their whole buffer before the copy.

## What it reads
In ttadapter, a masked `tl.load` becomes a UB buffer (`memref.alloc`), a copy of the in-bounds
part (`memref.copy` of a `memref.subview` with a dynamic size), and, first, a fill of the whole
buffer for the lanes past the mask, guarded by "is this block a partial one":

    scf.if %15 {
      linalg.fill ins(%c0_i32 : i32) outs(%alloc : memref<1024xi32>)
    } {hivm.unlikely_condition}
    ...
    memref.copy %subview, %subview_0 : ...

The fill is vector work and the copy (MTE2) waits for it (triton-ascend performance guidelines,
Example 1). It is absent when the load says `care_padding=False`.

## Kinds
`missed` per padded load, at its user line, with `buffer` (`1024xi32`), `bytes` and `fill` (the
value written: the load's `other`, 0 when it has none). A fill with `other` that the computation
needs (-inf before a max) is necessary; with no `other`, or one the result never reads,
`care_padding=False` removes it.
"""

from __future__ import annotations

import re
import struct

from diagnose.ascend.facts.context import AscendFactContext, shaped_types
from diagnose.records import Evidence

GUARD = "{hivm.unlikely_condition}"
# linalg.fill ins(%c0_i32 : i32) outs(%alloc : memref<1024xi32>)
FILL = re.compile(r"linalg\.fill ins\((?P<value>%[\w-]+) : \w+\) outs\((?P<buffer>%[\w-]+) : (?P<type>memref<[^>]*>)\)")


def masked_padding(ctx: AscendFactContext) -> list[Evidence]:
    ops = ctx.ops()
    out = []
    for guard in ops:
        if guard.name != "scf.if" or GUARD not in ctx.closing_line(guard):
            continue
        for fill in (op for op in ops if guard.contains(op) and op.name == "linalg.fill"):
            m = FILL.search(ctx.line(fill))
            if not m:
                continue
            buffer = shaped_types(m["type"])[0]
            args = {"buffer": str(buffer), "bytes": buffer.nbytes, "fill": literal(ctx.constants.get(m["value"], "?"))}
            location = fill.location or guard.location
            out.append(ctx.evidence("MaskedLoadPadding", "missed", "ttadapter", location, args, ctx.line(fill)))
    return out


def literal(text: str) -> str:
    """MLIR prints non-finite floats as bit patterns: `0xFF800000` -> `-inf` (f32), `0x7E00` -> `nan` (f16)."""
    if not text.startswith("0x"):
        return text
    bits = int(text, 16)
    fmt = {8: ("<I", "<f"), 4: ("<H", "<e")}.get(len(text) - 2)
    if fmt is None:
        return text
    return str(struct.unpack(fmt[1], struct.pack(fmt[0], bits))[0])
