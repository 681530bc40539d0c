"""Int64Arithmetic: source lines whose arithmetic runs on 64-bit integers.

## What it reads
ttadapter `arith` ops whose result (or, for `cmpi`, whose operands) are `i64`, as vectors
(`tensor<1024xi64>`) or scalars (`: i64`):

    %17 = arith.extsi %16 : tensor<1024xi32> to tensor<1024xi64>
    %1 = arith.muli %0, %c2048_i64 : i64

On A2/A3 the vector unit has no int64 add and no int64 (or int32) compare: such vector ops fall
back to scalar code in bishengir (triton-ascend performance guidelines). Scalar i64 index math is
cheap once per block, but not inside a scalar loop (`ScalarizedAccess`), where it runs once per
element.

## Kinds
`missed` for a line with int64 vector ops (`vector_ops`); `analysis` for one with scalar int64
ops only (`scalar_ops`, `in_scalar_loop`: how many of them run once per element).
"""

from __future__ import annotations

import re
from collections import defaultdict

from diagnose.ascend.facts.context import AscendFactContext
from diagnose.records import Evidence

INT_OPS = (
    "arith.extsi",
    "arith.extui",
    "arith.muli",
    "arith.addi",
    "arith.subi",
    "arith.cmpi",
    "arith.divsi",
    "arith.remsi",
    "arith.andi",
    "arith.ori",
    "arith.shli",
    "arith.shrsi",
    "arith.select",
    "arith.maxsi",
    "arith.minsi",
    "arith.trunci",
)
# `to tensor<1024xi64>`, `: tensor<1024xi64>`, `-> tensor<4x8xi64>`
VECTOR_I64 = re.compile(r"tensor<(?:\d+x)+i64>")
# `: i64` at the end, or `i32 to i64`
SCALAR_I64 = re.compile(r"(?:: |to )i64$")


def int64_arithmetic(ctx: AscendFactContext) -> list[Evidence]:
    by_line: dict[tuple[str, int], dict] = defaultdict(lambda: {"vector": [], "scalar": [], "looped": 0})
    for op in ctx.ops():
        if op.name not in INT_OPS or op.location is None:
            continue
        line = ctx.line(op)
        group = by_line[(op.location.path, op.location.line)]
        if VECTOR_I64.search(line):
            group["vector"].append((op, line))
        elif SCALAR_I64.search(line):
            group["scalar"].append((op, line))
            loop = ctx.inside(op, ("scf.for",))
            if loop is not None and "{ExtractedLoadOrStore}" in ctx.closing_line(loop):
                group["looped"] += 1
    out = []
    for (_path, _line), group in sorted(by_line.items(), key=lambda kv: kv[0][1]):
        if not group["vector"] and not group["scalar"]:
            continue
        first_op, first_line = (group["vector"] or group["scalar"])[0]
        args = {
            "vector_ops": len(group["vector"]),
            "scalar_ops": len(group["scalar"]),
            "in_scalar_loop": group["looped"],
        }
        kind = "missed" if group["vector"] else "analysis"
        out.append(ctx.evidence("Int64Arithmetic", kind, "ttadapter", first_op.location, args, first_line))
    return out
