from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import value_of

MAX_UNROLL = 64


class HugeStaticRange(Rule):
    """## What it finds
    `tl.static_range` over more than 64 iterations.

    ## Why it is slow
    `static_range` unrolls the loop at compile time: the body is copied once per iteration. Hundreds
    of copies blow up compile time and instruction cache, and keep every iteration's values live at
    once, which spills registers. Unrolling pays for a handful of iterations over constexpr-sized
    work, not for long loops.

    ## Example
    ```python
    for i in tl.static_range(256):
        acc += tl.load(ptr + i * BLOCK + cols)
    ```

    ## Use instead
    ```python
    for i in tl.range(0, 256):      # or plain range(); tl.range(..., loop_unroll_factor=4) to unroll a little
        acc += tl.load(ptr + i * BLOCK + cols)
    ```

    ## Known false positives
    None known. Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (825 kernel
    files, cuda and Ascend targets): no finding; of the 65 `tl.static_range` loops there, 7 have a
    trip count triage can evaluate, at most 32, so the rule was not exercised on real code beyond
    staying silent.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton `tl.static_range` and `tl.range` documentation.
    """

    code = "TRI015"
    name = "huge-static-range"
    message = "`tl.static_range` unrolls {n} iterations; use tl.range or range"
    fix_title = "Use tl.range (optionally with loop_unroll_factor)"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for call in kernel.calls("static_range"):
                variants = ctx.variants(kernel) or [None]
                counts = [c for c in (_trip_count(call, ctx, v) for v in variants) if c is not None]
                if counts and max(counts) > MAX_UNROLL:
                    yield self.hit(call, n=max(counts))


def _trip_count(call, ctx, variant) -> int | None:
    args = [value_of(a, ctx, variant) for a in call.args]
    if not args or None in args:
        return None
    if len(args) == 1:
        return args[0]
    step = args[2] if len(args) > 2 else 1
    return -(-(args[1] - args[0]) // step) if step > 0 else None
