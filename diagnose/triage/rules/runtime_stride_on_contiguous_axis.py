from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import in_address


class RuntimeStrideOnContiguousAxis(Rule):
    """## What it finds
    The contiguous (last) axis of an access multiplied by a stride argument that is excluded from
    specialization with `do_not_specialize`.

    ## Why it is slow
    The JIT turns an int argument equal to 1 into a compile-time constant, which is what lets the
    compiler prove the last axis contiguous and emit 128-bit accesses. A stride in
    `do_not_specialize` stays a runtime value: even when it is 1 at run time, every lane computes its
    own address and loads 32 bits (fp32, BLOCK 1024, 4 warps, sm_90: `x[i*stride]` with runtime
    stride 2 gives 8 x 32-bit; stride 1, specialized, 2 x 128-bit).

    ## Example
    ```python
    @triton.jit(do_not_specialize=["stride_xn"])
    def k(x_ptr, stride_xm, stride_xn, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn)
    ```

    ## Use instead
    Let the stride specialize (drop it from `do_not_specialize`), or require a contiguous last axis
    and index it without a stride: `cols[None, :]`.

    ## Known false positives
    A `do_not_specialize` float multiplied into a *value* (dropout's `x * p * keep`, a backward's
    `dy * mask * scale`) was taken for an address stride: 16 of 16 findings on FlagGems were of
    that shape. The rule now follows the product into addresses only: it must lie in the pointer
    argument of a `tl.load`/`tl.store`/`tl.atomic_*`, or in the value of a name that flows into one.
    None known since (measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials).

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton `runtime/jit.py` (launch-time specialization, `do_not_specialize`).
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
                    if (
                        isinstance(stride, ast.Name)
                        and stride.id in kernel.do_not_specialize
                        and _contiguous_axis(other, kernel)
                        and in_address(node, kernel)
                    ):
                        yield self.hit(node, stride=stride.id)


def _contiguous_axis(expr: ast.AST, kernel) -> bool:
    """`cols[None, :]` (last axis of a 2-D tile), or any block in a 1-D kernel."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Tuple):
        first = expr.slice.elts[0]
        return isinstance(first, ast.Constant) and first.value is None
    return not kernel.is_2d and kernel.is_block(expr)
