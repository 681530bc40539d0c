"""UBFootprint: an estimate of the unified buffer one block needs, against the target's UB size.

## What it reads
The ttadapter tensors and UB buffers, with a live range each (from its definition to its last
use, a use inside a loop keeping it alive to the loop's end), and the point where the live bytes
peak. A buffer is
- a `memref.alloc` (the UB copy of a load) or the result of a vector op (`arith.*`, `math.*`,
  `arith.select`, a call returning a tensor);
- a `linalg.*` result written into a `tensor.empty` (`linalg.fill`, `linalg.generic`), except a
  `linalg.fill` whose value feeds elementwise ops only: that is a scalar broadcast, which bishengir
  folds into a vector-scalar instruction;
- never a `tl.dot` operand or accumulator used by the cube alone (they live in L1 / L0);
- never a view or a value that reuses another's memory (`bufferization.to_tensor` of an alloc,
  `tensor.extract_slice`, `tensor.reshape`, `tensor.insert`, an `outs(...)` that is not empty, loop
  results and iter args).

With multibuffer on (the A2/A3 default; off on the 950) bishengir double-buffers the copy-in
buffers that sit in loops, so those count twice (`peak_bytes_multibuffered`). It is an estimate:
bishengir fuses elementwise chains (fewer buffers) and adds temporaries for some ops (more), and
the exact figure comes from it alone (`UB size = N bits`, `ENABLE_PRINT_UB_BITS=1`, with CANN).

## Kinds
`UBFootprint`: `missed` when the estimate passes the UB size, `analysis` otherwise, at the line
where the peak is reached, with `peak_bytes`, `peak_bytes_multibuffered` (when it differs),
`ub_bytes`, `multibuffer`, `live_buffers` and `largest` (`65536xf32 @ line 12`).
`UBAllocated`: `metric` with `required_bytes`, when bishengir ran and reported it.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.ascend.facts.context import AscendFactContext, ShapedType, result_type
from diagnose.records import Evidence

# Results that reuse the memory of their first tensor operand.
VIEWS = (
    "bufferization.to_tensor",
    "tensor.extract_slice",
    "tensor.reshape",
    "tensor.expand_shape",
    "tensor.collapse_shape",
    "tensor.cast",
    "memref.subview",
    "memref.reinterpret_cast",
    "memref.cast",
)
# Values with no memory of their own until something writes them.
EMPTY = ("tensor.empty", "bufferization.alloc_tensor")
# Cube ops: their operands and accumulators live in L1 and L0, not in the unified buffer.
CUBE_OPS = ("linalg.matmul", "linalg.batch_matmul")
# Uses that move or alias a value rather than compute on it with the vector unit.
NOT_VECTOR_USES = CUBE_OPS + VIEWS + ("scf.for", "scf.yield", "memref.copy")
# Ops whose bodies compute on scalars: nothing inside them is a buffer.
SCALAR_BODIES = ("linalg.generic", "linalg.reduce", "linalg.map")


@dataclass(frozen=True)
class Buffer:
    value: str
    type: ShapedType
    start: int
    end: int
    line: int | None
    copy_in_loop: bool


def ub_footprint(ctx: AscendFactContext) -> list[Evidence]:
    out = []
    buffers = live_buffers(ctx)
    if buffers:
        out.append(_estimate(ctx, buffers))
    measured = (ctx.kernel.get("npubin") or {}).get("required_ub_bits")
    if measured:
        args = {"required_bytes": measured // 8, "ub_bytes": ctx.target.shared_per_block}
        out.append(
            ctx.evidence("UBAllocated", "metric", "npubin", ctx.kernel_location, args, f"UB size = {measured} bits")
        )
    return out


def _estimate(ctx: AscendFactContext, buffers: list[Buffer]) -> Evidence:
    points = sorted({b.start for b in buffers})
    multibuffer = bool(ctx.options.get("multibuffer", not ctx.options.get("compile_on_910_95", False)))

    def live(at: int) -> list[Buffer]:
        return [b for b in buffers if b.start <= at <= b.end]

    def total(group: list[Buffer], doubled: bool) -> int:
        return sum(b.type.nbytes * (2 if doubled and b.copy_in_loop else 1) for b in group)

    peak_at = max(points, key=lambda p: (total(live(p), multibuffer), -p))
    group = live(peak_at)
    single, doubled = total(group, False), total(group, True)
    estimate = doubled if multibuffer else single
    largest = max(group, key=lambda b: b.type.nbytes)
    ub = ctx.target.shared_per_block
    args = {
        "peak_bytes": single,
        "peak_bytes_multibuffered": doubled if multibuffer and doubled != single else None,
        "ub_bytes": ub,
        "multibuffer": multibuffer,
        "live_buffers": len(group),
        "largest": f"{largest.type} @ line {largest.line}" if largest.line else str(largest.type),
    }
    peak_op = next(op for op in [*ctx.ops(), *ctx.calls] if op.ir_line == peak_at)
    kind = "missed" if estimate > ub else "analysis"
    return ctx.evidence("UBFootprint", kind, "ttadapter", peak_op.location, args, ctx.line(peak_op))


def live_buffers(ctx: AscendFactContext) -> list[Buffer]:
    """Every UB buffer of the kernel body with its live range in IR lines (see the docstring)."""
    ops = sorted([op for op in ctx.ops() if op.name != "func.func"] + list(ctx.calls), key=lambda op: op.ir_line)
    scalar_regions = [op for op in ops if op.name in SCALAR_BODIES]
    ops = [op for op in ops if not any(r.contains(op) for r in scalar_regions)]
    loops = [op for op in ops if op.name == "scf.for"]
    alias: dict[str, str] = {}
    roots: dict[str, tuple] = {}  # value -> (type, def op)
    for op in ops:
        line = ctx.line(op)
        if not op.results:
            continue
        result = op.results[0].split(":")[0]
        if op.name in VIEWS or op.name == "tensor.insert":
            source = (
                op.operands[1] if op.name == "tensor.insert" and len(op.operands) > 1 else (op.operands or [None])[0]
            )
            if source:
                alias[result] = source
            continue
        if op.name == "scf.for":
            for arg, init in _iter_args(line):
                alias[arg] = init
                alias.setdefault(result, init)
            continue
        if op.name in EMPTY:
            continue
        outs = _outs(line)
        if outs is not None and (outs not in ctx.defs or ctx.defs[outs].name not in EMPTY):
            alias[result] = outs  # destination-passing into a live value (or loop iter arg): same memory
            continue
        kind = result_type(line)
        if kind is None or kind.nbytes is None or not kind.shape:
            continue  # a scalar, a dynamic shape (a view of the masked tail) or a rank-0 tensor
        if op.name == "arith.cmpi":
            kind = ShapedType(kind.kind, kind.shape, "i1")  # the type printed is the operands'; masks are i1
        if op.name == "memref.alloc" or kind.kind == "tensor":
            roots[result] = (kind, op)

    def root(value: str) -> str:
        seen = 0
        while value in alias and seen < 64:
            value, seen = alias[value], seen + 1
        return value

    last_use: dict[str, int] = {}
    uses: dict[str, list] = {}
    for op in ops:
        for v in op.operands:
            r = root(v.split("#")[0])
            if r in roots:
                end = op.ir_line
                # A value used inside a loop it was not defined in lives until the loop ends.
                for loop in loops:
                    if loop.contains(op) and not (loop.contains(roots[r][1]) or loop is roots[r][1]):
                        end = max(end, loop.end_line or end)
                last_use[r] = max(last_use.get(r, 0), end)
                uses.setdefault(r, []).append(op)
    cube = {root(v.split("#")[0]) for op in ops if op.name in CUBE_OPS for v in op.operands}
    cube |= {root(op.results[0].split(":")[0]) for op in ops if op.name in CUBE_OPS and op.results}
    out = []
    for value, (kind, op) in roots.items():
        if op.name == "linalg.fill" and uses.get(value) and all(_elementwise(u) for u in uses[value]):
            continue  # a splat read only by elementwise ops: a vector-scalar operand after bishengir
        start = op.ir_line
        if value in cube:
            # A dot operand or accumulator lives in L1 / L0 while the cube works on it; it takes UB
            # only from its first use on the vector side (e.g. the cast of the result), if any.
            vector_uses = [u.ir_line for u in uses.get(value, []) if u.name not in NOT_VECTOR_USES]
            if not vector_uses:
                continue
            start = min(vector_uses)
        in_loop = op.name == "memref.alloc" and any(loop.contains(op) for loop in loops)
        line = op.location.line if op.location else None
        out.append(Buffer(value, kind, start, max(start, last_use.get(value, start)), line, in_loop))
    return out


def _elementwise(op) -> bool:
    return op.name.startswith(("arith.", "math."))


def _outs(line: str) -> str | None:
    """`... outs(%0 : tensor<1024xf32>)` -> `%0`."""
    if "outs(" not in line:
        return None
    inside = line.split("outs(", 1)[1]
    return inside.split(":", 1)[0].split(",")[0].strip() or None


def _iter_args(line: str) -> list[tuple[str, str]]:
    """`iter_args(%arg13 = %0, %arg14 = %1)` -> [("%arg13", "%0"), ("%arg14", "%1")]."""
    if "iter_args(" not in line:
        return []
    inside = line.split("iter_args(", 1)[1].split(")", 1)[0]
    pairs = []
    for item in inside.split(","):
        if "=" in item:
            arg, init = (x.strip() for x in item.split("=", 1))
            pairs.append((arg, init))
    return pairs
