"""KernelFeatures: what the static estimate reads about one compiled launch, from its IR facts.

## What it reads
- **TTIR** (before layouts and pipelining, so loops keep their source shape): every `tt.load`,
  `tt.store`, atomic and descriptor (TMA) access with its tile type, every `tt.dot` with its operand
  shapes, and every `scf.for` with its bounds. Bounds are evaluated from `arith.constant`s, the
  launch's argument values (`n_cols = 4096`) and simple integer arithmetic; an op inside loops runs
  `trips` times per program, the product over its enclosing loops. A loop `range(0, n, BLOCK)` whose
  last block is masked counts only its `n` useful elements (`useful = (ub - lb) / (trips * step)`).
- **IR facts** (`diagnose.ir.facts`, TTGIR/PTX/ptxas): `GlobalAccessWidth` (bits per line and
  direction, and `non_contiguous` / `gather` reasons), `SoftwarePipelining` (buffers per loop),
  `DotLowering` (wgmma / mma_v2 / fma), `PtxasResources` (warps per SM the registers allow),
  `SharedMemoryUsage` (blocks per SM the shared memory allows), the metadata's `num_warps`.
- **The launch**: the grid (programs) and the tensor arguments (their bytes: the unique footprint).

## Fields
`moved_bytes` (all programs, all trips, loads + stores: passes over memory show here),
`unique_bytes`, `width_efficiency` (byte-weighted harmonic mean of the per-access efficiency, see
`WIDTH_EFFICIENCY`), `inflight_bytes_per_program` (bytes one program has in flight: the loads
of one loop iteration times the pipelining depth, byte-weighted over loops), `resident_programs_per_sm`,
`dot_flops`, `dot_engine`, `dot_dtype`, and `unknown_trips` when a loop bound could not be evaluated
(counted once).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from diagnose.ir.facts.context import tensor_type
from diagnose.ir.launch import named_arguments
from diagnose.ir.sourcemap import parse_mlir_ops
from diagnose.records import Evidence, Record

MEMORY_OPS = {
    "tt.load": "load",
    "tt.store": "store",
    "tt.atomic_rmw": "atomic",
    "tt.atomic_cas": "atomic",
    "tt.descriptor_load": "load",
    "tt.descriptor_store": "store",
}
DOT_OPS = ("tt.dot", "tt.dot_scaled")
MAX_BLOCKS_PER_SM = 32
MAX_WARPS_PER_SM = 64
UNCOALESCED_REASONS = ("non_contiguous", "gather")
# How much of the bandwidth an access of each width reaches (bits -> share); strided ones reach UNCOALESCED of it.
WIDTH_EFFICIENCY = {128: 1.0, 96: 0.97, 64: 0.95, 32: 0.85, 16: 0.6, 8: 0.4}
UNKNOWN_WIDTH_EFFICIENCY = 0.85
UNCOALESCED = 0.3

# %acc = scf.for %k = %c0_i32 to %K step %c32_i32 iter_args(...) -> (...) : i32 {
SCF_FOR = re.compile(r"scf\.for (%[\w-]+) = (%[\w-]+) to (%[\w-]+) step (%[\w-]+)")
# %c128_i32 = arith.constant 128 : i32
INT_CONSTANT = re.compile(r"arith\.constant (-?\d+) : i\d+")
# : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
DOT_TYPES = re.compile(r"tensor<(\d+)x(\d+)x(\w+)[,>].*\*\s*tensor<(\d+)x(\d+)x\w+[,>]")
# : !tt.ptr<f32>    (a scalar load or store)
SCALAR_PTR = re.compile(r":\s*!tt\.ptr<(\w+)>\s*$")
ARITH = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": lambda a, b: int(a / b) if b else None,
    "arith.divui": lambda a, b: a // b if b else None,
    "arith.ceildivsi": lambda a, b: -(-a // b) if b else None,
    "arith.maxsi": max,
    "arith.minsi": min,
}
CASTS = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast")


@dataclass(frozen=True)
class Access(Record):
    """One global memory op of the kernel: per program, over all its trips; `loop_line` is the source
    line of its innermost loop (None outside loops)."""

    line: int
    direction: str
    bytes_per_trip: float
    trips: float
    loop_line: int | None
    width_bits: int | None = None
    coalesced: bool = True

    @property
    def bytes_per_program(self) -> float:
        return self.bytes_per_trip * self.trips


@dataclass(frozen=True)
class KernelFeatures(Record):
    """The static view of one launch that `estimate.py` turns into time."""

    kernel: str
    programs: int
    num_warps: int
    num_stages: int
    moved_bytes: float
    unique_bytes: float
    width_efficiency: float
    inflight_bytes_per_program: float
    resident_programs_per_sm: int
    dot_flops: float = 0.0
    dot_engine: str | None = None
    dot_dtype: str | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    unknown_trips: int = 0
    uncoalesced_fraction: float = 0.0
    accesses: tuple[Access, ...] = field(default=(), repr=False)


def _int_constants(ops) -> dict[str, int]:
    out = {}
    for op in ops:
        if op.name == "arith.constant" and op.results:
            m = INT_CONSTANT.search(op.raw)
            if m:
                out[op.results[0].split(":")[0]] = int(m[1])
    return out


def _evaluator(ops, named: dict[str, Any]):
    """value(ssa) -> int | None over constants, integer launch arguments and simple arithmetic."""
    constants = _int_constants(ops)
    defs = {r.split(":")[0]: op for op in ops for r in op.results}
    args = {f"%{k}": v for k, v in named.items() if isinstance(v, int) and not isinstance(v, bool)}

    def value(ssa: str, depth: int = 0) -> int | None:
        if ssa in constants:
            return constants[ssa]
        if ssa in args:
            return args[ssa]
        op = defs.get(ssa)
        if op is None or depth > 16:
            return None
        if op.name in CASTS and op.operands:
            return value(op.operands[0], depth + 1)
        if op.name in ARITH and len(op.operands) >= 2:
            a, b = value(op.operands[0], depth + 1), value(op.operands[1], depth + 1)
            return ARITH[op.name](a, b) if a is not None and b is not None else None
        return None

    return value


def _tile_bytes(raw: str) -> float:
    ttype = tensor_type(raw.split(" : ", 1)[-1]) if " : " in raw else tensor_type(raw)
    if ttype is not None:
        return ttype.numel * max(8, ttype.elem_bits) / 8
    m = SCALAR_PTR.search(raw)
    if m:
        bits = re.search(r"\d+", m[1])
        return max(8, int(bits[0]) if bits else 32) / 8
    return 0.0


def loop_trips(ttir_ops, named: dict[str, Any]) -> dict[int, tuple[float | None, float]]:
    """IR line of each `scf.for` -> (trips or None, useful fraction of its last-block-rounded work)."""
    value = _evaluator(ttir_ops, named)
    out = {}
    for op in ttir_ops:
        if op.name != "scf.for":
            continue
        m = SCF_FOR.search(op.raw)
        lb, ub, step = (value(m[i]) for i in (2, 3, 4)) if m else (None, None, None)
        if None in (lb, ub, step) or step <= 0:
            out[op.ir_line] = (None, 1.0)
            continue
        trips = max(0, math.ceil((ub - lb) / step))
        useful = (ub - lb) / (trips * step) if trips else 1.0
        out[op.ir_line] = (float(trips), useful)
    return out


def extract(record: Any, launch: Any, evidence: list[Evidence], sm_count: int) -> KernelFeatures:
    """Features of one compiled launch (`CompileRecord`, `ConcreteLaunch`, its IR facts)."""
    ops = parse_mlir_ops(record.asm.get("ttir", ""))
    named = named_arguments(launch.jit, launch.args, launch.kwargs)
    trips_of = loop_trips(ops, named)
    loops = [op for op in ops if op.name == "scf.for"]
    widths = _widths(evidence)
    unknown = sum(1 for t, _ in trips_of.values() if t is None)

    def enclosing(op) -> list:
        return [loop for loop in loops if loop.contains(op)]

    accesses, dot_flops, dot_dtype = [], 0.0, None
    for op in ops:
        if op.name in MEMORY_OPS or op.name in DOT_OPS:
            around = enclosing(op)
            trips = 1.0
            for loop in around:
                t, useful = trips_of[loop.ir_line]
                trips *= (t if t is not None else 1.0) * useful
            line = op.location.line if op.location else 0
        if op.name in MEMORY_OPS:
            direction = MEMORY_OPS[op.name]
            width, coalesced = widths.get((line, "store" if direction == "store" else "load"), (None, True))
            innermost = max(around, key=lambda loop: loop.ir_line) if around else None
            loop_line = innermost.location.line if innermost is not None and innermost.location else None
            accesses.append(Access(line, direction, _tile_bytes(op.raw), trips, loop_line, width, coalesced))
        elif op.name in DOT_OPS:
            m = DOT_TYPES.search(op.raw)
            if m:
                mm, kk, elem, _, nn = int(m[1]), int(m[2]), m[3], int(m[4]), int(m[5])
                dot_flops += 2.0 * mm * nn * kk * trips
                dot_dtype = dot_dtype or elem
    programs = math.prod(launch.grid) if launch.grid else 1
    moved = programs * sum(a.bytes_per_program * (2 if a.direction == "atomic" else 1) for a in accesses)
    unique = float(sum(_tensor_bytes(v) for v in launch.args))
    metadata = record.metadata
    num_warps = int(metadata.get("num_warps") or 4)
    resources = _resources(evidence)
    return KernelFeatures(
        kernel=launch.kernel,
        programs=programs,
        num_warps=num_warps,
        num_stages=int(metadata.get("num_stages") or 1),
        moved_bytes=moved,
        unique_bytes=unique,
        width_efficiency=_width_efficiency(accesses),
        inflight_bytes_per_program=_inflight(accesses, _pipelined(evidence)),
        resident_programs_per_sm=_resident(num_warps, resources),
        dot_flops=dot_flops * programs,
        dot_engine=_engine(evidence),
        dot_dtype=dot_dtype,
        registers=resources.get("registers"),
        shared_bytes=resources.get("shared"),
        unknown_trips=unknown,
        uncoalesced_fraction=_uncoalesced(accesses),
        accesses=tuple(accesses),
    )


def _tensor_bytes(value: Any) -> int:
    nbytes = getattr(value, "nbytes", None)
    if nbytes is None and hasattr(value, "numel") and hasattr(value, "element_size"):
        nbytes = value.numel() * value.element_size()
    return int(nbytes or 0) if hasattr(value, "data_ptr") else 0


def _widths(evidence: list[Evidence]) -> dict[tuple[int, str], tuple[int | None, bool]]:
    out = {}
    for e in evidence:
        if e.name != "GlobalAccessWidth" or e.location is None:
            continue
        bits = e.arg("bits")
        width = 128 if e.arg("tma") or bits == "tma" else (int(bits) if isinstance(bits, (int, float)) else None)
        coalesced = e.arg("reason") not in UNCOALESCED_REASONS
        out[(e.location.line, e.arg("access", "load"))] = (width, coalesced)
    return out


def _resources(evidence: list[Evidence]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for e in evidence:
        if e.name == "PtxasResources":
            out["registers"] = e.arg("registers")
            out["warps_by_registers"] = e.arg("occupancy_regs")
        elif e.name == "AmdgcnResources":
            waves = e.arg("occupancy_waves")  # waves per SIMD, 4 SIMDs per CU
            out["warps_by_registers"] = 4 * int(waves) if waves else None
        elif e.name == "SharedMemoryUsage":
            out["shared"] = e.arg("shared")
            out["blocks_by_shared"] = e.arg("blocks_per_sm")
    return out


def _resident(num_warps: int, resources: dict[str, Any]) -> int:
    limits = [MAX_BLOCKS_PER_SM, MAX_WARPS_PER_SM // max(1, num_warps)]
    if resources.get("warps_by_registers"):
        limits.append(int(resources["warps_by_registers"]) // max(1, num_warps))
    if resources.get("blocks_by_shared"):
        limits.append(int(resources["blocks_by_shared"]))
    return max(1, min(limits))


def _pipelined(evidence: list[Evidence]) -> dict[int, int]:
    """Source line of each pipelined loop -> loads in flight per load (its buffers)."""
    return {
        e.location.line: int(e.arg("buffers") or 2)
        for e in evidence
        if e.name == "SoftwarePipelining" and e.kind == "passed" and e.location
    }


def _engine(evidence: list[Evidence]) -> str | None:
    engines = [e.arg("engine") for e in evidence if e.name == "DotLowering"]
    return engines[0] if engines else None


def access_efficiency(width_bits: int | None, coalesced: bool = True) -> float:
    """Efficiency of one access width (non-decreasing in the width), times `UNCOALESCED` if strided."""
    if width_bits is None:
        eff = UNKNOWN_WIDTH_EFFICIENCY
    else:
        eff = max((e for w, e in WIDTH_EFFICIENCY.items() if w <= width_bits), default=min(WIDTH_EFFICIENCY.values()))
    return eff * (1.0 if coalesced else UNCOALESCED)


def _width_efficiency(accesses: list[Access]) -> float:
    total = sum(a.bytes_per_program for a in accesses)
    if not total:
        return 1.0
    cost = sum(a.bytes_per_program / access_efficiency(a.width_bits, a.coalesced) for a in accesses)
    return total / cost


def _inflight(accesses: list[Access], pipelined_lines: dict[int, int]) -> float:
    """Bytes one program has in flight, weighted by how many bytes each loop (or the body) loads."""
    groups: dict[int | None, list[Access]] = {}
    for a in accesses:
        if a.direction != "store":
            groups.setdefault(a.loop_line, []).append(a)
    total = sum(a.bytes_per_program for group in groups.values() for a in group)
    if not total:
        return 0.0
    weighted = 0.0
    for group in groups.values():
        per_trip = sum(a.bytes_per_trip for a in group)
        depth = pipelined_lines.get(group[0].loop_line, 1) if group[0].loop_line is not None else 1
        weighted += per_trip * depth * sum(a.bytes_per_program for a in group) / total
    return weighted


def _uncoalesced(accesses: list[Access]) -> float:
    total = sum(a.bytes_per_program for a in accesses)
    return sum(a.bytes_per_program for a in accesses if not a.coalesced) / total if total else 0.0
