from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import is_device_helper

BLOCKY = ("arange", "make_block_ptr", "make_tensor_descriptor", "zeros", "full")


class ScalarKernelWithoutBlock(Rule):
    """## What it finds
    A kernel that loads or stores through program-id-indexed scalars and never builds a block
    (`tl.arange`, block pointers, descriptors): one element per program.

    ## Why it is slow
    A program is a whole thread block (128 threads with 4 warps) and here it moves one value: 1/128
    of the lanes do the work, every access is a single 32-bit transaction, and the grid needs one
    program per element, so scheduling overhead dominates. This is the shape of a direct
    translation of a CUDA per-thread kernel.

    ## Example
    ```python
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(out_ptr + pid, x * 2)
    ```

    ## Use instead
    ```python
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)
    ```

    ## Known false positives
    Kernels whose program walks a sequence of scalars in a loop were flagged: 6 of 6 findings on
    FlagGems were the stages of a MoE block-alignment (per-expert histogram, prefix sum over
    experts, scatter with running counters), one program per expert, each looping over many
    tokens with a data-dependent read-modify-write that a block of lanes cannot do without atomics.
    Such a kernel does not move "one scalar per program"; kernels whose loads or stores sit in a
    loop are no longer reported, nor jit device helpers (which move what the caller gives them).
    Serial per-program loops are a different problem (`scalar-loop-reduction` covers the
    reduction case). None known since.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 01-vector-add.
    """

    code = "TRI025"
    name = "scalar-kernel-without-block"
    message = "`{kernel}` moves one scalar per program (no tl.arange or block pointer); give each program a block"
    fix_title = "Process BLOCK elements per program with tl.arange"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            accesses = kernel.calls("load", "store")
            if not accesses or not kernel.calls("program_id") or kernel.calls(*BLOCKY) or kernel.block_names:
                continue
            if any(kernel.enclosing_loop(access) is not None for access in accesses):
                continue  # each program walks a sequence (a scan, a histogram): not one element
            if is_device_helper(ctx, kernel):
                continue  # a device function's scalars are the caller's business
            launches = ctx.launches_of(kernel)
            if launches and all(_single_program(launch) for launch in launches):
                continue  # a (1,) finalize kernel that writes one value is fine
            yield self.hit(accesses[0], kernel=kernel.name)


def _single_program(launch) -> bool:
    grid = launch.grid
    return isinstance(grid, ast.Tuple) and all(isinstance(e, ast.Constant) and e.value == 1 for e in grid.elts)
