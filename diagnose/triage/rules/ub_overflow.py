from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import arange_sizes

ELEMENT_BYTES = 4  # blocks are computed in fp32 (loads are upcast); the usual case


class UbOverflow(Rule):
    """## What it finds
    A vector kernel whose live blocks cannot fit the unified buffer (UB): an estimate of
    `block elements * 4 B * (loads + 1) * multibuffer` above 192 KB (A2/A3) or 248 KB (950), where the
    multibuffer factor is 2 on 910B (on by default) and 1 on 950.

    ## Why it is slow
    It fails to compile: `ub overflow, requires N bits while 1572864 bits available`. Even near the
    limit, multibuffering (double-buffered DMA) is disabled and loads no longer overlap compute. Tile
    in two levels instead: BLOCK per core, BLOCK_SUB per in-core loop step. The estimate ignores
    masks and temporaries, so real use is higher.

    ## Example
    ```python
    offs = pid * BLOCK + tl.arange(0, BLOCK)          # BLOCK = 65536, 2 loads: ~1 MB
    ```

    ## Use instead
    ```python
    for sub in range(0, BLOCK, BLOCK_SUB):           # BLOCK_SUB = 8192: 192 KB with multibuffer
        offs = pid * BLOCK + sub + tl.arange(0, BLOCK_SUB)
    ```

    ## Targets
    ascend.

    ## References
    notes/ascend.md R3 (UB capacity, BLOCK and BLOCK_SUB) and section 4.
    """

    code = "ASC003"
    name = "ub-overflow"
    message = "~{kb} KB of live blocks ({live} x {elements} elements x 4 B{mb}) exceeds the {ub} KB unified buffer"
    fix_title = "Tile with a smaller in-core BLOCK_SUB loop"
    severity = "error"
    targets = ("ascend",)

    def check(self, ctx):
        ub = ctx.target.shared_per_block
        multibuffer = 1 if ctx.target.short_arch.startswith("950") else 2
        for kernel in ctx.kernels.values():
            if kernel.has_dot or not kernel.calls("load"):
                continue
            live = len(kernel.calls("load")) + 1

            def elements(v):
                sizes = sorted((s for s in arange_sizes(ctx, kernel, v)), key=lambda s: -s[0])
                if not sizes:
                    return None, None
                n = sizes[0][0] * (sizes[1][0] if kernel.is_2d and len(sizes) > 1 else 1)
                return n, sizes[0][1]

            def need(v):
                n, _ = elements(v)
                return None if n is None else n * ELEMENT_BYTES * live * multibuffer

            for v in ctx.failing(kernel, lambda v: (b := need(v)) is not None and b > ub):
                n, where = elements(v)
                yield self.hit(where, kb=need(v) // 1024, live=live, elements=n,
                               mb=" x 2 multibuffer" if multibuffer == 2 else "", ub=ub // 1024)
