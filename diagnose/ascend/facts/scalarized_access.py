"""ScalarizedAccess: loads and stores that triton-adapter turned into a loop of single elements.

## What it reads
ttadapter `scf.for` loops marked `{ExtractedLoadOrStore}` (on the line that closes the loop): the
`triton-to-unstructure` pass rewrites an access it cannot prove structured (an index loaded from
memory, flattened `//` / `%` by a runtime value, a mask it cannot split) into one iteration per
element, each a `memref.reinterpret_cast ... sizes: [1]` plus a `memref.load` (or `memref.store`),
(or a `bufferization.materialize_in_destination` of a `tensor<1x...>` for a store), with the
gathered values marked `{DiscreteMemAccess}`:

    %17 = scf.for %arg12 = %c0 to %c1024 step %c1 iter_args(%arg13 = %0) -> (tensor<1024xf32>) {
      %extracted = tensor.extract %16[%arg12] {DiscreteMemAccess} : tensor<1024xi32>
      %reinterpret_cast_3 = memref.reinterpret_cast %arg2 to offset: [%19], sizes: [1], strides: [1] ...
      %20 = memref.load %reinterpret_cast_3[%c0] : memref<1xf32, strided<[1], offset: ?>>
    } {ExtractedLoadOrStore}

## Kinds
`missed` per loop, at the user line of the load or store, with `access` (load / store), `elements`
(the loop's trip count: one scalar access, and one scalar-unit iteration, per element), `dtype`,
`index` (`loaded` when the index comes from memory, `computed` when it is arithmetic such as
`//` and `%`) and `discrete_ops` (ops marked `DiscreteMemAccess` on that line). A vector DMA moves
a whole block per instruction; this moves one element. Fixes: 2-D indices or
`enable_linearize=True` for flattened indexing; `tl.gather` from a contiguously loaded table;
on the 950, `compile_mode="unstructured_in_simt"`.
"""

from __future__ import annotations

import re
from collections import Counter

from diagnose.ascend.facts.context import AscendFactContext, result_type
from diagnose.records import Evidence

LOOP_MARKER = "{ExtractedLoadOrStore}"
# A scalar store writes its one element with either of these.
STORES = ("memref.store", "bufferization.materialize_in_destination")
# %17 = scf.for %arg12 = %c0 to %c1024 step %c1 iter_args(%arg13 = %0) -> (tensor<1024xf32>) {
FOR_BOUNDS = re.compile(r"scf\.for %[\w-]+ = (%[\w-]+) to (%[\w-]+) step (%[\w-]+)")
DISCRETE_MARKER = "{DiscreteMemAccess}"


def scalarized_access(ctx: AscendFactContext) -> list[Evidence]:
    ops = ctx.ops()
    discrete = Counter(op.location.line for op in ops if op.location and DISCRETE_MARKER in ctx.line(op))
    out = []
    for loop in ops:
        if loop.name != "scf.for" or LOOP_MARKER not in ctx.closing_line(loop):
            continue
        body = [op for op in ops if loop.contains(op)]
        store = next((op for op in body if op.name in STORES), None)
        load = next((op for op in body if op.name == "memref.load"), None)
        access = store or load
        element = result_type(ctx.line(access)) if access is not None else None
        index = (
            "loaded"
            if any(op.name == "tensor.extract" and DISCRETE_MARKER in ctx.line(op) for op in body)
            else "computed"
        )
        args = {
            "access": "store" if store is not None else "load",
            "elements": trip_count(ctx, loop),
            "dtype": element.elem if element else None,
            "index": index,
            "discrete_ops": discrete.get(loop.location.line) if loop.location else None,
        }
        out.append(ctx.evidence("ScalarizedAccess", "missed", "ttadapter", loop.location, args, ctx.line(loop)))
    return out


def trip_count(ctx: AscendFactContext, loop) -> int | str:
    """`scf.for %i = %c0 to %c1024 step %c1` -> 1024 (the bound's name when it is not constant)."""
    m = FOR_BOUNDS.search(ctx.line(loop))
    if not m:
        return "?"
    values = [ctx.value_name(v) for v in m.groups()]
    try:
        lo, hi, st = (int(v) for v in values)
    except ValueError:
        return values[1]
    return max(0, (hi - lo + st - 1) // st)
