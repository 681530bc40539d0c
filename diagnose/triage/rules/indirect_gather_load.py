from __future__ import annotations

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import pointer_of


class IndirectGatherLoad(Rule):
    """## What it finds
    A `tl.load`/`tl.store` whose address depends on values loaded from memory (an index tensor):
    `w = tl.load(w_ptr + tl.load(idx_ptr + offs)[:, None] * D + cols)`.

    ## Why it is slow
    The NPU's DMA engine moves contiguous bursts; an address computed per element from data compiles
    to a scalar loop, one element per iteration (verified in IR, notes/ascend.md 2e). On GPUs a
    gather is merely uncoalesced; on Ascend it serializes.

    ## Example
    ```python
    idx = tl.load(idx_ptr + offs, mask=mask)
    x = tl.load(src_ptr + idx, mask=mask)
    ```

    ## Use instead
    When the source fits in the UB, load it contiguously once and select there:
    ```python
    table = tl.load(src_ptr + tl.arange(0, TABLE))
    x = tl.gather(table, idx, axis=0)
    ```
    Otherwise gather whole rows (contiguous runs of D elements) rather than single elements.

    ## Targets
    ascend.

    ## References
    notes/ascend.md R5 and 2e; triton-ascend "Transferring Data to the UB and Then Selecting".
    """

    code = "ASC005"
    name = "indirect-gather-load"
    message = "`tl.{op}` address depends on loaded values (`{index}`); the NPU scalarizes gathers"
    fix_title = "Load the source contiguously into the UB and select with tl.gather"
    confidence = "high"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            loaded = kernel.loaded_names()
            if not loaded:
                continue
            for call in kernel.calls("load", "store"):
                ptr = pointer_of(call)
                data = sorted(kernel.sources(ptr) & loaded) if ptr is not None else []
                if data:
                    yield self.hit(call, op=kernel.qualname(call.func).rsplit(".", 1)[-1], index=data[0])
