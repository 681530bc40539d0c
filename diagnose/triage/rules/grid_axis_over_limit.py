from __future__ import annotations

import math

from diagnose.triage.rule import Rule

LIMITS = (2**31 - 1, 65535, 65535)


class GridAxisOverLimit(Rule):
    """## What it finds
    A launch whose grid, evaluated from the input shapes in `get_inputs()`/`get_input_groups()`,
    exceeds CUDA's limits: 2^31-1 programs on axis 0, 65535 on axes 1 and 2.

    ## Why it is slow
    The launch fails (`invalid argument`): the kernel never runs. Large second and third axes are the
    usual culprit, e.g. a grid of `(heads, tokens)` instead of `(tokens, heads)`.

    ## Example
    ```python
    rope_kernel[(n_heads, n_tokens)](q, cos, sin, ...)     # n_tokens = 131072 on axis 1
    ```

    ## Use instead
    ```python
    rope_kernel[(n_tokens, n_heads)](q, cos, sin, ...)     # the big axis first
    ```

    ## Known false positives
    None known. Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (825 kernel
    files, cuda target; the rule does not run for Ascend): no finding. Library code rarely declares
    input shapes, so only 113 of the 1327 launches there had a grid triage could evaluate; the rule
    was not exercised on real code beyond staying silent.

    ## Targets
    cuda.

    ## References
    CUDA C++ Programming Guide, "Compute capabilities" (maximum grid dimensions).
    """

    code = "TRI020"
    name = "grid-axis-over-limit"
    message = "grid {grid} exceeds the CUDA limit of {limit} on axis {axis}; the launch fails"
    fix_title = "Put the largest extent on axis 0, or loop inside the kernel"
    severity = "error"
    confidence = "high"
    targets = ("cuda",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for v in sorted(ctx.variants(kernel), key=lambda v: -math.prod(v.grid or (0,))):
                if v.grid is None or v.launch is None:
                    continue
                for axis, (size, limit) in enumerate(zip(v.grid, LIMITS)):
                    if size > limit:
                        yield self.hit(v.launch.grid, grid=v.grid, limit=limit, axis=axis)
                        break
