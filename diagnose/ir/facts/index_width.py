"""Int64IndexArithmetic: source lines whose index arithmetic runs in 64 bits.

## What it reads
TTGIR ops whose result is an `i64` tensor (`arith.extsi ... to tensor<1024xi64>`, `arith.muli`,
`arith.addi`, `arith.cmpi` on `xi64`) and the kernel's `i64` arguments (the JIT gives an int
argument type `i64` when its launch value is 2**31 or more); PTX `mul.lo.s64`, `mad.lo.s64` and
`setp.*.s64` on the same line (plain 32-bit index math shows as `mad.wide.s32` instead).

## Kinds
`analysis` per line, with `ops` (i64 tensor ops), `ptx_64bit` (64-bit multiply/compare
instructions), and `origin`: the `i64` arguments the values come from, or `in_kernel` when the
kernel makes them 64-bit itself (`.to(tl.int64)`, descriptor lowering). 64-bit math doubles the registers of every index and costs more
instructions; it is needed only when offsets can pass 2**31.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from diagnose.ir.facts.context import FactContext, FuncArg
from diagnose.records import Evidence

# %offs_2 = arith.extsi %offs_1 : tensor<1024xi32, #blocked> to tensor<1024xi64, #blocked>
I64_RESULT = re.compile(r"(?:->|to|:)\s*tensor<(?:\d+x)+i64\b")
# mul.lo.s64 %rd5, %rd4, 1024;      setp.lt.s64 %p1, %rd7, %rd2;
PTX_64 = re.compile(r"^\s*(?:@!?%p\d+\s+)?(mul\.lo\.s64|mad\.lo\.s64|setp\.\w+\.s64)\b")
ARITH = ("arith.extsi", "arith.muli", "arith.addi", "arith.subi", "arith.cmpi", "arith.remsi", "arith.divsi")


def index_width(ctx: FactContext) -> list[Evidence]:
    by_line: dict[tuple[str, int], list] = defaultdict(list)
    for op in ctx.ops("ttgir"):
        if op.name in ARITH and op.location and I64_RESULT.search(op.raw):
            by_line[(op.location.path, op.location.line)].append(op)
    ptx = Counter()
    if ctx.target.is_nvidia:
        for line in ctx.asm_lines:
            if line.location and PTX_64.match(line.text):
                ptx[(line.location.path, line.location.line)] += 1
    out = []
    for key, ops in sorted(by_line.items()):
        wide_args = sorted(
            {
                x.name
                for op in ops
                for v in op.operands
                for x in ctx.provenance(v, 80)
                if isinstance(x, FuncArg) and x.type == "i64"
            }
        )
        args = {
            "ops": len(ops),
            "ptx_64bit": ptx.get(key) if ctx.target.is_nvidia else None,
            "origin": ", ".join(wide_args) if wide_args else "in_kernel",
        }
        out.append(ctx.evidence("Int64IndexArithmetic", "analysis", "ttgir", ops[0].location, args, ops[0].raw))
    return out
