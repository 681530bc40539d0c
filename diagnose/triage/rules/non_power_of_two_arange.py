from __future__ import annotations

from diagnose.blocks import arange_bounds
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import is_power_of_two, value_of, vendor_port

# Triton ports whose `tl.arange` takes any size: triton-ascend documents it (docs/zh/triton_api/
# Creation_Ops/arange.md: "CUDA requires end - start to be a power of two; Triton-Ascend does not"),
# and Cambricon's port is what FlagGems' `_cambricon` backend tunes over sizes 12, 24 and 5120 with.
PORTS_WITHOUT_THE_LIMIT = ("ascend", "cambricon")


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

    ## Known false positives
    The limit is upstream Triton's (CUDA and HIP), not every port's: triton-ascend documents that
    `tl.arange` needs no power of two, and 8 of 8 findings on Liger-Kernel and FlagGems were in
    Ascend or Cambricon backend code (`_ascend/`, `_cambricon/` folders: sizes 7, 12, 5120, 20480)
    that compiles there. The rule no longer runs for Ascend targets, and skips files written for
    those ports (a `_ascend`/`npu`/`_cambricon`/`mlu` folder in the path, or a `torch_npu` /
    `torch_mlu` import) whatever the target. None known since.

    ## Targets
    cuda, hip (not ascend: triton-ascend's `tl.arange` takes any size).

    ## References
    `triton.language.arange` documentation; `triton.next_power_of_2`.
    """

    code = "TRI016"
    name = "non-power-of-two-arange"
    message = "`tl.arange` over {size} elements: block sizes must be powers of two"
    fix_title = "Round the block up with triton.next_power_of_2 and mask the tail"
    severity = "error"
    confidence = "high"
    targets = ("cuda", "hip")

    def check(self, ctx):
        if vendor_port(ctx) in PORTS_WITHOUT_THE_LIMIT:
            return  # compiled by a port that takes any arange size, whatever the target asked
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
