from __future__ import annotations

import math

from diagnose.triage.rule import Rule

LIMIT = 65535


class GridOver65535(Rule):
    """## What it finds
    A launch whose grid, evaluated from the input shapes in `get_inputs()`/`get_input_groups()`, has
    more than 65535 programs in total.

    ## Why it is slow
    On Ascend the grid is flattened to a 16-bit `coreDim`; larger grids fail at launch with
    `coreDim=xxxx can't be greater than UINT16_MAX`. A GPU-style `cdiv(n, BLOCK)` grid over 2^28
    elements with BLOCK 128 asks for two million programs.

    ## Example
    ```python
    add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK_SIZE=128)
    ```

    ## Use instead
    ```python
    grid = (num_vectorcore,)          # loop over blocks inside: for b in range(pid, nblocks, tl.num_programs(0))
    ```
    or raise BLOCK so that `cdiv(n, BLOCK) <= 65535` (`next_power_of_2(cdiv(n, 65535))`).
    `TRITON_ALL_BLOCKS_PARALLEL=1` also clamps the grid, if block order does not matter.

    ## Known false positives
    None known. Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (825 kernel
    files, ascend:910b): 0 findings, because library code has no `get_inputs()` giving the shapes a
    grid is evaluated from; the rule fires on benchmark-style files (KernelBench `ModelNew`).

    ## Targets
    ascend.

    ## References
    triton-ascend `driver.py`; triton-ascend migration guide (`docs/en/migration_guide/migrate_from_gpu.md`,
    FAQ).
    """

    code = "ASC001"
    name = "grid-over-65535"
    message = "grid of {programs} programs exceeds 65535 (Ascend coreDim is 16-bit); the launch fails"
    fix_title = "Launch one program per core and loop over blocks inside the kernel"
    severity = "error"
    confidence = "high"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for v in sorted(ctx.variants(kernel), key=lambda v: -math.prod(v.grid or (0,))):
                if v.grid is not None and v.launch is not None and math.prod(v.grid) > LIMIT:
                    yield self.hit(v.launch.grid, programs=math.prod(v.grid))
