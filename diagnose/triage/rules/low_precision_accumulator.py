from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword

LOW = {"float16", "bfloat16", "float8e4nv", "float8e5"}


class LowPrecisionAccumulator(Rule):
    """## What it finds
    An accumulator created as fp16/bf16 (`tl.zeros(..., dtype=tl.float16)`) and summed into inside a
    loop, or `tl.dot(..., out_dtype=tl.float16)`.

    ## Why it is slow
    Summing thousands of terms in 16-bit floats loses most of the result's precision, and the usual
    "fix" (a wider `atol`, a shorter K) costs more than it saves. Tensor cores accumulate in fp32 at
    full speed, so an fp32 accumulator costs nothing on the MMA path; convert once at the store.
    On Ascend, fp16 reductions need fp32 accumulation too (notes/ascend.md R9).

    ## Example
    ```python
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    for k in range(0, K, BLOCK_K):
        acc += tl.dot(a, b)
    ```

    ## Use instead
    ```python
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a, b, acc)
    tl.store(c_ptrs, acc.to(tl.float16))
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 03-matrix-multiplication (fp32 accumulator); notes/ascend.md R9.
    """

    code = "TRI021"
    name = "low-precision-accumulator"
    message = "{what} accumulates in {dtype}; accumulate in tl.float32 and convert at the store"
    fix_title = "Accumulate in tl.float32"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for call in kernel.calls("dot"):
                dtype = _dtype(kernel, keyword(call, "out_dtype"))
                if dtype in LOW:
                    yield self.hit(call, what="`tl.dot`", dtype=dtype)
            accumulated = _accumulated_in_loops(kernel)
            for call in kernel.calls("zeros", "full"):
                dtype = _dtype(kernel, keyword(call, "dtype", 1 if kernel.qualname(call.func).endswith("zeros") else 2))
                target = kernel.parent.get(call)
                if dtype in LOW and isinstance(target, ast.Assign) and isinstance(target.targets[0], ast.Name) \
                        and target.targets[0].id in accumulated:
                    yield self.hit(call, what=f"`{target.targets[0].id}`", dtype=dtype)


def _dtype(kernel, node) -> str | None:
    name = kernel.qualname(node) if node is not None else None
    return name.rsplit(".", 1)[-1] if name else None


def _accumulated_in_loops(kernel) -> set[str]:
    out = set()
    for loop in kernel.loops:
        for node in ast.walk(loop):
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)):
                    out.add(name)
    return out
