from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import arange_bounds, is_power_of_two, value_of


class NonPowerOfTwoArange(Rule):
    """## What it finds
    A `tl.arange(start, end)` whose size `end - start` is known (a literal, a constexpr default, a
    launch keyword, an autotune config) and is not a power of two.

    ## Why it is slow
    It does not run at all: Triton requires block shapes to be powers of two and rejects the kernel
    at compile time ("arange's range must be a power of 2"). Sizes that are not powers of two are
    handled by rounding the block up and masking the tail.

    ## Example
    ```python
    cols = tl.arange(0, 1000)
    ```

    ## Use instead
    ```python
    cols = tl.arange(0, 1024)          # BLOCK = triton.next_power_of_2(n_cols)
    x = tl.load(ptr + cols, mask=cols < n_cols)
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    `triton.language.arange` documentation; `triton.next_power_of_2`.
    """

    code = "TRI016"
    name = "non-power-of-two-arange"
    message = "`tl.arange` over {size} elements: block sizes must be powers of two"
    fix_title = "Round the block up with triton.next_power_of_2 and mask the tail"
    severity = "error"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for call in kernel.calls("arange"):
                start, end = arange_bounds(call)
                if end is None:
                    continue
                for v in ctx.variants(kernel) or [None]:
                    a, b = value_of(start, ctx, v), value_of(end, ctx, v)
                    if a is not None and b is not None and not is_power_of_two(b - a):
                        literal = value_of(end, ctx, None) is not None
                        where = call if literal or v is None or not hasattr(end, "id") else v.where(end.id)
                        yield self.hit(where, size=b - a)
