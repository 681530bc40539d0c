from __future__ import annotations

import math

from diagnose.triage.rule import Rule


class SingleProgramGrid(Rule):
    """## What it finds
    A launch whose grid is a single program (`(1,)`, or evaluating to 1 for every input group) of a
    kernel that loops over its data.

    ## Why it is slow
    One program runs on one SM (one AI core on Ascend) and the other 131 of an H100 idle: the loop
    inside does serially what the grid would do in parallel. Split the loop across programs, with a
    second small pass to combine partial results if the kernel reduces.

    ## Example
    ```python
    sum_kernel[(1,)](x, out, n, BLOCK=1024)      # for start in range(0, n, BLOCK): ...
    ```

    ## Use instead
    ```python
    sum_kernel[(triton.cdiv(n, BLOCK),)](x, partials, n, BLOCK=1024)
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 01-vector-add (grids); notes/ascend.md R1 (grid = physical cores).
    """

    code = "TRI026"
    name = "single-program-grid"
    message = "`{kernel}` is launched with a single program; one core does the whole loop"
    fix_title = "Spread the loop over a grid of programs"
    confidence = "high"

    def check(self, ctx):
        for launch in ctx.launches:
            kernel = ctx.kernels[launch.kernel]
            if not kernel.loops or not kernel.calls("load"):
                continue
            grids = [v.grid for v in ctx.variants(kernel) if v.launch is launch]
            if grids and all(g is not None and math.prod(g) == 1 for g in grids):
                yield self.hit(launch.grid, kernel=kernel.name)
