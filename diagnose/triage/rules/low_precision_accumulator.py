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
    On Ascend, fp16 reductions need fp32 accumulation too.

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

    ## Known false positives
    `acc += tl.dot(p, v, out_dtype=tl.float16)` into an fp32 accumulator (SageAttention's P.V,
    4 of 4 findings on TritonBench, both targets) was flagged although only one tile's BLOCK_N
    terms are summed in 16 bits and the long sum across tiles is fp32: a deliberate trade that pays
    on GPUs whose fp16-accumulate MMA is twice as fast. A 16-bit `out_dtype` dot is now reported
    only when it carries the accumulator itself (`tl.dot(a, b, acc, out_dtype=...)`), adds into an
    accumulator created in 16 bits, or stands alone. None known since.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 03-matrix-multiplication (fp32 accumulator); skills.sh ascend/agent-skills,
    triton-operator-performance-optim.
    """

    code = "TRI021"
    name = "low-precision-accumulator"
    message = "{what} accumulates in {dtype}; accumulate in tl.float32 and convert at the store"
    fix_title = "Accumulate in tl.float32"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            low_accumulators = _low_accumulators(kernel)
            for call in kernel.calls("dot"):
                dtype = _dtype(kernel, keyword(call, "out_dtype"))
                if dtype in LOW and _sums_in_low_precision(kernel, call, low_accumulators):
                    yield self.hit(call, what="`tl.dot`", dtype=dtype)
            accumulated = _accumulated_in_loops(kernel)
            for call in kernel.calls("zeros", "full"):
                dtype = _dtype(kernel, keyword(call, "dtype", 1 if kernel.qualname(call.func).endswith("zeros") else 2))
                target = kernel.parent.get(call)
                if (
                    dtype in LOW
                    and isinstance(target, ast.Assign)
                    and isinstance(target.targets[0], ast.Name)
                    and target.targets[0].id in accumulated
                ):
                    yield self.hit(call, what=f"`{target.targets[0].id}`", dtype=dtype)


def _dtype(kernel, node) -> str | None:
    name = kernel.qualname(node) if node is not None else None
    return name.rsplit(".", 1)[-1] if name else None


def _low_accumulators(kernel) -> set[str]:
    """Names created by `tl.zeros`/`tl.full` with a 16-bit (or 8-bit) float dtype."""
    out = set()
    for call in kernel.calls("zeros", "full"):
        dtype = _dtype(kernel, keyword(call, "dtype", 1 if kernel.qualname(call.func).endswith("zeros") else 2))
        target = kernel.parent.get(call)
        if dtype in LOW and isinstance(target, ast.Assign) and isinstance(target.targets[0], ast.Name):
            out.add(target.targets[0].id)
    return out


def _sums_in_low_precision(kernel, call: ast.Call, low_accumulators: set[str]) -> bool:
    """Whether a 16-bit `out_dtype` dot carries the long sum: it takes the accumulator itself
    (`tl.dot(a, b, acc, out_dtype=...)`), or its result is added into an accumulator created in
    16 bits. A tile's partial product added into a wider accumulator (`acc += tl.dot(p, v,
    out_dtype=tl.float16)`, acc fp32) sums only one tile's K terms in 16 bits."""
    if keyword(call, "acc", 2) is not None:
        return True
    parent = kernel.parent.get(call)
    # Through arithmetic and `.to(...)` casts up to the statement that uses the product.
    while isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Attribute)) or (
        isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "to"
    ):
        parent = kernel.parent.get(parent)
    if isinstance(parent, ast.AugAssign) and isinstance(parent.target, ast.Name):
        return parent.target.id in low_accumulators
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        name = parent.targets[0].id
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(parent.value)):
            return name in low_accumulators  # `acc = acc + tl.dot(...)`
    return True  # not summed into anything: the dot's own K is the whole sum


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
