from __future__ import annotations

import ast

from diagnose.triage.rule import Rule


class RuntimeStrideOnContiguousAxis(Rule):
    """## What it finds
    The contiguous (last) axis of an access multiplied by a stride argument that is excluded from
    specialization with `do_not_specialize`.

    ## Why it is slow
    The JIT turns an int argument equal to 1 into a compile-time constant, which is what lets the
    compiler prove the last axis contiguous and emit 128-bit accesses. A stride in
    `do_not_specialize` stays a runtime value: even when it is 1 at run time, every lane computes its
    own address and loads 32 bits (notes/triton-internals.md 3a: `x[i*stride]` with runtime stride 2
    gives 8 x 32-bit; stride 1, specialized, 2 x 128-bit).

    ## Example
    ```python
    @triton.jit(do_not_specialize=["stride_xn"])
    def k(x_ptr, stride_xm, stride_xn, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn)
    ```

    ## Use instead
    Let the stride specialize (drop it from `do_not_specialize`), or require a contiguous last axis
    and index it without a stride: `cols[None, :]`.

    ## Targets
    cuda, hip, ascend.

    ## References
    notes/triton-internals.md sections 3a and 7 (launch-time specialization).
    """

    code = "TRI003"
    name = "runtime-stride-on-contiguous-axis"
    message = "contiguous axis scaled by unspecialized stride `{stride}`; accesses cannot vectorize"
    fix_title = "Let the stride specialize, or index the contiguous axis without a stride"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if not kernel.do_not_specialize:
                continue
            for node in ast.walk(kernel.node):
                if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
                    continue
                for stride, other in ((node.left, node.right), (node.right, node.left)):
                    if (isinstance(stride, ast.Name) and stride.id in kernel.do_not_specialize
                            and _contiguous_axis(other, kernel)):
                        yield self.hit(node, stride=stride.id)


def _contiguous_axis(expr: ast.AST, kernel) -> bool:
    """`cols[None, :]` (last axis of a 2-D tile), or any block in a 1-D kernel."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Tuple):
        first = expr.slice.elts[0]
        return isinstance(first, ast.Constant) and first.value is None
    return not kernel.is_2d and kernel.is_block(expr)
