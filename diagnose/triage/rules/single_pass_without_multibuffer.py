from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import jit_callees, program_id_calls


class SinglePassWithoutMultibuffer(Rule):
    """## What it finds
    A vector kernel with no loop at all: each program loads its block, computes and stores once.
    No loop of its own and none that reads memory in the `@triton.jit` helpers it calls, launched
    as more than one program.

    ## Why it is slow
    Ascend overlaps DMA with compute by multibuffering (ping-pong) across loop iterations. With a
    single pass there is nothing to overlap: the vector unit waits for the whole load, then the DMA
    waits for the compute. Looping over sub-blocks (BLOCK per core, BLOCK_SUB per iteration) lets
    the compiler double-buffer. Info only: small inputs may not need it.

    ## Example
    ```python
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)
    ```

    ## Use instead
    ```python
    for sub in range(0, BLOCK, BLOCK_SUB):
        offs = pid * BLOCK + sub + tl.arange(0, BLOCK_SUB)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)
    ```

    ## Known false positives
    Read against 25 findings on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (`benchmarks/triage_precision/ASC013.csv`): the one-row-per-program and one-block-per-program
    kernels it finds are what Liger's own Ascend ports rewrite as `tl.range(pid, n, num_programs)`
    loops. It now accepts:
    - kernels whose loop lives in a `@triton.jit` helper they call (`acc = _attn_fwd_inner(...)`),
      when that loop reads memory; a compute-only helper loop (a bitonic sort's stages) is no
      pipelining loop and does not count;
    - kernels with a `tl.dot` in a called helper;
    - one-program kernels: no `program_id` at all (the last stage of a two-stage reduction over
      the partials), or every launch written with a grid of one (`[(1,)]`, `[1, 1, 1]`). A grid that
      only evaluates to 1 for the file's sample inputs still counts as many programs.
    Still reported, debatable: the first stage of a two-stage reduction (one scalar stored per
    program; a grid-stride accumulate loop is the Ascend way, but FlagGems' Ascend port keeps the
    shape) and tiny bookkeeping kernels over batch-sized metadata, where the gain is nil.

    ## Targets
    ascend.

    ## References
    triton-ascend performance guidelines, "Instruction Parallelism"; `multibuffer=True` is the default
    on A2/A3.
    """

    code = "ASC013"
    name = "single-pass-without-multibuffer"
    message = "`{kernel}` loads, computes and stores in one pass; no loop for multibuffer to overlap DMA and compute"
    fix_title = "Loop over BLOCK_SUB-sized sub-blocks inside each program"
    severity = "info"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if not (kernel.calls("load") and kernel.calls("store") and ctx.launches_of(kernel)):
                continue
            body = [kernel, *jit_callees(ctx, kernel)]  # a loop in a called helper is a loop
            if kernel.loops or any(k.has_dot for k in body) or not any(k.calls("arange") for k in body):
                continue
            if any(_loop_loads(ctx, k) for k in body[1:]):
                continue
            if not any(program_id_calls(k) for k in body) or _one_program(ctx, kernel):
                continue  # one program over one block (a reduction's last stage): nothing to overlap
            yield self.hit(kernel.calls("load")[0], kernel=kernel.name)


def _loop_loads(ctx, kernel) -> bool:
    """A loop of this helper reads memory (directly or through a helper it calls): a pipelining
    loop. A compute-only loop (the stages of a bitonic sort over a loaded block) is not."""
    loaders = {k.name for k in [kernel, *jit_callees(ctx, kernel)] if k.calls("load")}
    for loop in kernel.loops:
        for node in ast.walk(loop):
            if isinstance(node, ast.Call) and (
                kernel.qualname(node.func) == "triton.language.load"
                or (isinstance(node.func, ast.Name) and node.func.id in loaders)
            ):
                return True
    return False


def _one_program(ctx, kernel) -> bool:
    """Every launch is written with a grid of one program (`[(1,)]`, `[1, 1, 1]`). A grid that only
    evaluates to 1 for the file's sample inputs does not count: real inputs are larger."""
    launches = ctx.launches_of(kernel)
    return bool(launches) and all(_literal_one(launch.grid) for launch in launches)


def _literal_one(grid) -> bool:
    elts = grid.elts if isinstance(grid, (ast.Tuple, ast.List)) else [grid]
    return bool(elts) and all(isinstance(e, ast.Constant) and e.value == 1 for e in elts)
