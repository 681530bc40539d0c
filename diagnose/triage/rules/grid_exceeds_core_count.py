from __future__ import annotations

import math

from diagnose.triage.rule import Rule


class GridExceedsCoreCount(Rule):
    """## What it finds
    A launch whose grid, evaluated from the input shapes, has more programs than the NPU has cores
    (vector cores for vector-only kernels, AI cores for kernels with `tl.dot`), for a kernel that
    does not loop over programs (`tl.num_programs`).

    ## Why it is slow
    Ascend binds each program to a physical core; extra programs run in further rounds, each paying
    launch and initialization again, and the last round leaves most cores idle. The idiom is a grid
    of exactly the core count with a loop over blocks inside the kernel. For
    1e5-1e6 elements the best grid can be below the core count; measure.

    ## Example
    ```python
    softmax_kernel[(n_rows,)](x, out, n_cols, BLOCK=BLOCK)          # n_rows = 16384
    ```

    ## Use instead
    ```python
    softmax_kernel[(num_vectorcore,)](x, out, n_rows, n_cols, BLOCK=BLOCK)
    # in the kernel: for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
    ```

    ## Known false positives
    None known: all 4 findings on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    read (`benchmarks/triage_precision/ASC002.csv`; 3 true, 1 debatable). Three are persistent
    kernels sized for a GPU (stream-K's `sm_count=108` first wave, the grouped-GEMM tutorial's
    `NUM_SM` of 84/128): the kernel loops already, its grid should be the NPU's core count. The
    debatable one is the TMA-descriptor variant of that tutorial, which has no Ascend lowering. It
    fires only where the grid evaluates from the file (literal grids, `get_inputs()` shapes,
    defaults), so it is silent on most library launchers.

    ## Targets
    ascend.

    ## References
    triton-ascend programming guide, "Setting the Maximum Number of Hardware Cores" (core counts:
    `num_vectorcore` = 2 x `num_aicore`, from `driver.py`); mindspore-ai/akg reduction case studies
    (grids below the core count).
    """

    code = "ASC002"
    name = "grid-exceeds-core-count"
    message = "grid of {programs} programs on {cores} {kind} cores runs in {rounds} rounds; launch one program per core and loop"
    fix_title = "Use grid=(num_cores,) and loop over blocks with tl.num_programs"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if kernel.calls("num_programs"):
                continue
            kind = "AI" if kernel.has_dot else "vector"
            cores = ctx.target.sm_count if kernel.has_dot else ctx.target.vector_cores
            for v in sorted(ctx.variants(kernel), key=lambda v: -math.prod(v.grid or (0,))):
                if v.grid is None or v.launch is None:
                    continue
                programs = math.prod(v.grid)
                if cores < programs <= 65535:  # above 65535 grid-over-65535 says it fails outright
                    yield self.hit(
                        v.launch.grid, programs=programs, cores=cores, kind=kind, rounds=-(-programs // cores)
                    )
