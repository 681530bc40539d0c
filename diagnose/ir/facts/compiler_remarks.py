"""CompilerRemark: the MLIR remarks and warnings the compile emitted, at their source lines.

## What it reads
Every pass runs with `MLIR_ENABLE_DIAGNOSTICS=remarks,warnings` and its own fd-2 capture
(`passes.py`), so each diagnostic is known together with the pass that emitted it, e.g.
`remark: MMA version 3 acceleration not applied due to unsupported shapes or data types.` from
`tritongpu-accelerate-matmul`, `Warning: vectorization fails vec = 1 origin vec = 4 ...` from
`convert-triton-gpu-to-llvm`, `operation scheduled before its operands. Pipelining will be
disabled.` from the pipeliner. The `note:` lines that follow are kept as `notes`.

## Kinds
Source `pass:<pass name>`; `missed` when the message says something was not done (not applied,
fails, disabled), `passed` when it says something was (Performed ...), `analysis` otherwise.
"""

from __future__ import annotations

import re

from diagnose.ir.facts.context import FactContext
from diagnose.records import Evidence, Location

MISSED = re.compile(r"not applied|fails|failed|disabled|cannot|unable|will likely", re.IGNORECASE)
PASSED = re.compile(r"^Performed|\bapplied\b", re.IGNORECASE)


def compiler_remarks(ctx: FactContext) -> list[Evidence]:
    out = []
    for d in ctx.diagnostics:
        kind = "missed" if MISSED.search(d.message) else "passed" if PASSED.search(d.message) else "analysis"
        args = {"severity": d.severity, "message": d.message, "notes": " | ".join(d.notes) or None, "stage": d.stage}
        name = "CompilerWarning" if d.severity in ("warning", "error") else "CompilerRemark"
        out.append(ctx.evidence(name, kind, f"pass:{d.pass_name}", Location(d.path, d.line, d.col), args, d.raw))
    return out
