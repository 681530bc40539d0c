from __future__ import annotations

from diagnose.triage.rule import Rule


class SinglePassWithoutMultibuffer(Rule):
    """## What it finds
    A vector kernel with no loop at all: each program loads its block, computes and stores once.

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

    Not yet read against real code: on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials

    (825 files with kernels) it gave 444 findings at ascend:910b, none of them labelled yet, so its

    precision there is unknown.


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
            if kernel.loops or kernel.has_dot or not kernel.calls("arange"):
                continue
            if kernel.calls("load") and kernel.calls("store") and ctx.launches_of(kernel):
                yield self.hit(kernel.calls("load")[0], kernel=kernel.name)
