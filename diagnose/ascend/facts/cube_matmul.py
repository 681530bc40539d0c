"""CubeMatmul: each `tl.dot` as the cube unit will run it, with its tile shape and precision.

## What it reads
ttadapter `linalg.matmul` (and `linalg.batch_matmul`) ops:

    %21 = linalg.matmul {input_precison = "ieee"} ins(%15, %20 : tensor<128x64xf16>, tensor<64x128xf16>)
        outs(%arg18 : tensor<128x128xf32>) -> tensor<128x128xf32>

## Kinds
`analysis` per matmul at the user line of the `tl.dot`, with `m`, `n`, `k`, `in_dtype`,
`acc_dtype` and `precision` (`ieee`, `hf32`). The operand tiles must fit L0A/L0B (64 KB each)
and the accumulator L0C (128 KB on 910B, 256 KB on 950), with M, N, K multiples of 16;
`a_bytes`, `b_bytes` and `acc_bytes` give those sizes.
"""

from __future__ import annotations

import re

from diagnose.ascend.facts.context import AscendFactContext, shaped_types
from diagnose.records import Evidence

MATMULS = ("linalg.matmul", "linalg.batch_matmul")
# {input_precison = "ieee"}   (sic: triton-adapter spells it so)
PRECISION = re.compile(r'input_precis\w* = "(\w+)"')


def cube_matmul(ctx: AscendFactContext) -> list[Evidence]:
    out = []
    for op in ctx.ops():
        if op.name not in MATMULS:
            continue
        line = ctx.line(op)
        types = [t for t in shaped_types(line) if t.kind == "tensor"]
        if len(types) < 3:
            continue
        a, b, acc = types[0], types[1], types[2]
        precision = PRECISION.search(line)
        args = {
            "m": a.shape[-2],
            "n": b.shape[-1],
            "k": a.shape[-1],
            "in_dtype": a.elem,
            "acc_dtype": acc.elem,
            "precision": precision[1] if precision else None,
            "a_bytes": a.nbytes,
            "b_bytes": b.nbytes,
            "acc_bytes": acc.nbytes,
        }
        out.append(ctx.evidence("CubeMatmul", "analysis", "ttadapter", op.location, args, line))
    return out
