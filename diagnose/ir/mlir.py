"""Triton's own MLIR bindings (`triton._C.libtriton.ir`) over TTIR/TTGIR files.

They know every Triton dialect (`tt`, `ttg`, `ttng`, `amdg`) and match Triton's LLVM revision, so
they parse what no upstream MLIR wheel can. `ir.parse_mlir_module` takes a file path; `walk`
visits ops post-order; an op has no location of its own in the bindings, but each result's
`get_loc()` prints resolved (`loc("acc"("/tmp/k.py":17:27))`), and zero-result ops (`tt.store`,
`scf.yield`) have none: `sourcemap.parse_mlir_ops` covers those, and this module checks it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BoundOp:
    """An op as the bindings see it: name and the printed location of its first result."""

    name: str
    loc: str | None


def binding_ops(path: str, backend: str) -> list[BoundOp]:
    """All ops of the module in the file at `path` (post-order, without `builtin.module`)."""
    from triton._C.libtriton import amd, ir, nvidia  # deferred: triton is heavy

    context = ir.context()
    ir.load_dialects(context)
    (amd if backend == "hip" else nvidia).load_dialects(context)
    module = ir.parse_mlir_module(path, context)
    ops: list[BoundOp] = []

    def visit(op):
        name = op.get_name()
        if name != "builtin.module":
            ops.append(BoundOp(name, str(op.get_result(0).get_loc()) if op.get_num_results() else None))

    module.walk(visit)
    del module, context
    return ops


def module_int_attrs(path: str, backend: str, names: tuple[str, ...]) -> dict[str, int | None]:
    """Integer module attributes such as `ttg.num-warps` (None when absent)."""
    from triton._C.libtriton import amd, ir, nvidia  # deferred: triton is heavy

    context = ir.context()
    ir.load_dialects(context)
    (amd if backend == "hip" else nvidia).load_dialects(context)
    module = ir.parse_mlir_module(path, context)
    out = {name: module.get_int_attr(name) for name in names}
    del module, context
    return out
