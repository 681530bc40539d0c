"""GlobalAccessWidth: how wide each source line's global loads and stores are, and why not wider.

## What it reads
PTX `ld.global` / `st.global` (`.v4.b32` = 128 bits, `.b32` = 32), `cp.async ... 0x10` (16 bytes)
and `cp.async.bulk.tensor` (TMA); AMDGCN `global_*`/`buffer_*` `load`/`store` with `dwordx4` (128),
`dwordx2` (64), `dword` (32), `short` (16), `byte` (8). Instructions are grouped by the user line
their `.loc` maps to and by direction; the TTGIR memory op on that line gives the element type, the
layout (elements per thread along the fastest axis) and, through its operands, where the pointer,
the offsets and the mask come from.

## Kinds and reasons
`passed` when the widest access is 128 bits (or TMA); `analysis` (`reason` = `scalar`) for a
single value per program. `missed` otherwise, with the first reason that holds:

- `accumulator_layout`: the value is stored straight from a dot's MMA/MFMA layout, whose threads
  hold only a few contiguous elements (no conversion to a blocked layout was made);
- `gather`: the addresses come from values loaded from memory;
- `non_contiguous`: the offsets along the fastest axis are multiplied by a runtime stride;
- `pointer_not_divisible`: a pointer argument has no `tt.divisibility` (its launch value was not
  16-byte aligned, e.g. a view `x[1:]`);
- `offset_not_divisible`: an integer argument in the address has no `tt.divisibility`;
- `mask_bound_not_divisible`: the mask compares against an argument that is not a multiple of 16;
- `elements_per_thread`: the layout gives each thread fewer contiguous elements than 128 bits
  (BLOCK too small for `num_warps`, or a narrow dtype): the width already is the most it can be;
- `unknown` when none of these can be told.

The address reasons come before the layout's: with unproven divisibility the access stays narrow
however many elements a thread holds (a 1000-column softmax at one element per thread is 32-bit for its
row stride and `n_cols`; four elements per thread would not change that). Every reason that holds is in
`reasons`, the first in `reason` and `detail`. Instructions of different widths on one line (a thread's
six contiguous elements: one 128-bit and one 64-bit access) are counted per width in `widths`.

On NVIDIA the compiler's own remark (`vectorization fails vec = 1 origin vec = 4 ... mask is 1`)
is attached as `remark` when it was emitted for the line.
"""

from __future__ import annotations

import re
from collections import defaultdict

from diagnose.ir.facts.context import FactContext, FuncArg, tensor_type
from diagnose.ir.sourcemap import IROp, is_library
from diagnose.records import Evidence

NAME = "GlobalAccessWidth"

# @%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];     st.global.b32 [ %rd3 + 0 ], { %r5 };
PTX_GLOBAL = re.compile(r"^\s*(?:@!?%p\d+\s+)?(?P<dir>ld|st)\.global(?P<mods>(?:\.[\w:]+)*)\s")
# cp.async.cg.shared.global [ %r139 + 0 ], [ %rd106 + 0 ], 0x10, %r141;
PTX_CP_ASYNC = re.compile(
    r"^\s*(?:@!?%p\d+\s+)?cp\.async\.c[ag]\.shared\.global\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-f]+|\d+)"
)
# cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [ %r1 ], [ %rd2, { %r3, %r4 } ], [ %r5 ];
PTX_TMA = re.compile(r"^\s*(?:@!?%p\d+\s+)?cp\.async\.bulk\.tensor\.\d+d\.(?P<dst>[\w:]+?)\.(?P<src>[\w:]+?)[.\s]")
# buffer_load_dwordx4 v[2:5], v1, s[8:11], 0 offen        global_store_short v[0:1], v2, off
AMD_GLOBAL = re.compile(
    r"^\s*(?:global|buffer|flat)_(?P<dir>load|store)_(?P<kind>dwordx[234]|dword|b128|b96|b64|b32|b16|[su]?short(?:_d16(?:_hi)?)?|[su]?byte(?:_d16(?:_hi)?)?|d16\w*)\b"
)
AMD_BITS = {"dwordx4": 128, "b128": 128, "dwordx3": 96, "b96": 96, "dwordx2": 64, "b64": 64, "dword": 32, "b32": 32}
# vectorization fails vec = 1 origin vec = 4 numElems = 8 mask is 1
VEC_REMARK = re.compile(r"vectorization fails")

MEMORY_OPS = {
    # op name: (direction, pointer operand indices, mask operand index)
    "tt.load": ("load", (0,), 1),
    "tt.store": ("store", (0,), 2),
    "amdg.buffer_load": ("load", (0, 1), 2),
    "amdg.buffer_store": ("store", (1, 2), 3),
    "ttg.async_copy_global_to_local": ("load", (0,), 2),
    "amdg.buffer_load_to_local": ("load", (1, 2), 3),
}
LOAD_OPS = ("tt.load", "amdg.buffer_load")


def global_access_width(ctx: FactContext) -> list[Evidence]:
    accesses: dict[tuple[str, int, str], list[tuple[int | str, str]]] = defaultdict(list)
    for line in ctx.asm_lines:
        if line.location is None or is_library(line.location.path):
            continue
        found = _ptx_access(line.text) if ctx.target.is_nvidia else _amd_access(line.text)
        if found:
            direction, bits = found
            accesses[(line.location.path, line.location.line, direction)].append((bits, line.text))
    mem_ops: dict[tuple[str, int, str], IROp] = {}
    for op in ctx.ops("ttgir"):
        if op.name in MEMORY_OPS and op.location:
            mem_ops.setdefault((op.location.path, op.location.line, MEMORY_OPS[op.name][0]), op)
    out = []
    for (path, lineno, direction), found in sorted(accesses.items()):
        op = mem_ops.get((path, lineno, direction))
        out.append(_evidence(ctx, direction, found, op))
    return out


def _ptx_access(text: str) -> tuple[str, int | str] | None:
    if m := PTX_GLOBAL.match(text):
        vec = re.search(r"\.v(\d)", m["mods"])
        size = re.search(r"\.[bfsu](\d+)$", m["mods"])
        return ("load" if m["dir"] == "ld" else "store"), (int(vec[1]) if vec else 1) * (int(size[1]) if size else 0)
    if m := PTX_CP_ASYNC.match(text):
        return "load", int(m[1], 0) * 8
    if m := PTX_TMA.match(text):
        return ("load" if m["src"] == "global" else "store"), "tma"
    return None


def _amd_access(text: str) -> tuple[str, int] | None:
    m = AMD_GLOBAL.match(text)
    if not m:
        return None
    kind = m["kind"]
    bits = AMD_BITS.get(kind) or (16 if "short" in kind or kind.startswith("d16") else 8)
    return m["dir"], bits


def _evidence(ctx: FactContext, direction: str, found: list[tuple[int | str, str]], op: IROp | None) -> Evidence:
    widths = [b for b, _ in found if isinstance(b, int)]
    tma = len(widths) < len(found)
    bits = max(widths) if widths else None
    raw = min(found, key=lambda f: f[0] if isinstance(f[0], int) else 1 << 30)[1]
    ttype = tensor_type(op.raw) if op else None
    per_thread = _elements_per_thread(ctx, ttype)
    args = {
        "access": direction,
        "bits": "tma" if bits is None else bits,
        "instructions": len(found),
        "elem_bits": ttype.elem_bits if ttype else None,
        "per_thread": per_thread,
    }
    if len(set(widths)) > 1:
        args["widths"] = ", ".join(f"{b}-bit x{widths.count(b)}" for b in sorted(set(widths), reverse=True))
    location = op.location if op else None
    if op is not None and ttype is None:
        args["reason"] = "scalar"  # one value per program: nothing to vectorize
        return ctx.evidence(NAME, "analysis", ctx.asm_stage, location, args, raw)
    if tma or (bits is not None and bits >= 128):
        return ctx.evidence(NAME, "passed", ctx.asm_stage, location or _asm_loc(ctx, raw), args, raw)
    reasons = _reasons(ctx, op, bits, ttype.elem_bits if ttype else None, per_thread) if op else []
    args["reason"] = reasons[0][0] if reasons else "unknown"
    args["detail"] = reasons[0][1] if reasons else None
    if len(reasons) > 1:
        args["reasons"] = "; ".join(f"{name} {detail}" for name, detail in reasons)
    remark = next(
        (d for d in ctx.diagnostics if location and d.line == location.line and VEC_REMARK.search(d.message)), None
    )
    args["remark"] = remark.message if remark else None
    return ctx.evidence(NAME, "missed", ctx.asm_stage, location or _asm_loc(ctx, raw), args, raw)


def _asm_loc(ctx: FactContext, raw: str):
    return next((line.location for line in ctx.asm_lines if line.text == raw), None)


def _elements_per_thread(ctx: FactContext, ttype) -> int | None:
    if ttype is None or ttype.layout not in ctx.blocked_layouts:
        return None
    size_per_thread, order = ctx.blocked_layouts[ttype.layout]
    return size_per_thread[order[0]]


def _reasons(
    ctx: FactContext, op: IROp, bits: int, elem_bits: int | None, per_thread: int | None
) -> list[tuple[str, str]]:
    reasons: list[tuple[str, str]] = []
    ttype = tensor_type(op.raw)
    if ttype and ttype.layout and ttype.layout.startswith("#mma"):
        reasons.append(("accumulator_layout", f"written straight from the {ttype.layout} dot layout"))
    _, pointer_idx, mask_idx = MEMORY_OPS[op.name]
    pointer_chain = [x for i in pointer_idx if i < len(op.operands) for x in ctx.provenance(op.operands[i])]
    if any(isinstance(x, IROp) and x.name in LOAD_OPS for x in pointer_chain):
        reasons.append(("gather", "addresses are loaded from memory"))
    stride = _fast_axis_stride(ctx, op, pointer_chain)
    if stride:
        reasons.append(("non_contiguous", f"offsets scaled by runtime {stride}"))
    args = [x for x in pointer_chain if isinstance(x, FuncArg)]
    for arg in args:
        if arg.is_pointer and arg.divisibility is None:
            reasons.append(("pointer_not_divisible", f"{arg.name} is not 16-byte aligned"))
    for arg in args:
        if not arg.is_pointer and arg.divisibility is None and arg.name != stride:
            reasons.append(("offset_not_divisible", f"{arg.name} is not a multiple of 16"))
    if mask_idx < len(op.operands):
        for arg in ctx.provenance(op.operands[mask_idx]):
            if isinstance(arg, FuncArg) and not arg.is_pointer and arg.divisibility is None:
                reasons.append(("mask_bound_not_divisible", f"mask bound {arg.name} is not a multiple of 16"))
    if per_thread is not None and elem_bits and per_thread * elem_bits < 128 and bits >= per_thread * elem_bits:
        reasons.append(("elements_per_thread", f"{per_thread} x {elem_bits}-bit elements per thread"))
    return reasons


def _fast_axis_stride(ctx: FactContext, op: IROp, chain: list) -> str | None:
    """The runtime argument that multiplies offsets varying along the load's fastest axis, if any."""
    ttype = tensor_type(op.raw)
    fast = ctx.blocked_layouts.get(ttype.layout, (None, [len(ttype.shape) - 1]))[1][0] if ttype else 0
    for x in chain:
        if not (isinstance(x, IROp) and x.name == "arith.muli" and len(x.operands) == 2):
            continue
        mtype = tensor_type(x.raw)
        if mtype is None or fast >= len(mtype.shape) or mtype.shape[fast] == 1:
            continue
        sides = [ctx.provenance(v, limit=60) for v in x.operands]
        for this, other in (sides, sides[::-1]):
            if any(isinstance(y, IROp) and y.name == "tt.make_range" for y in this):
                runtime = [y for y in other if isinstance(y, FuncArg) and not y.is_pointer]
                if runtime and not any(isinstance(y, IROp) and y.name == "tt.make_range" for y in other):
                    return runtime[0].name
    return None
