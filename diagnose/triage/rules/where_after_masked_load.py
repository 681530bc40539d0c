from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword


class WhereAfterMaskedLoad(Rule):
    """## What it finds
    `tl.where(mask, x, value)` right on a value loaded with the same mask:
    `x = tl.load(p, mask=mask); x = tl.where(mask, x, 0.0)`.

    ## Why it is slow
    On Ascend a masked load without `other=` first vector-fills the padding and then copies with
    MTE2, so the DMA waits for the vector unit; the `tl.where` then selects over the whole block a
    second time. Putting the fill value in `other=` does both in the load. On
    GPUs the select is merely redundant.

    ## Example
    ```python
    x = tl.load(x_ptr + offs, mask=mask)
    x = tl.where(mask, x, 0.0)
    ```

    ## Use instead
    ```python
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    ```
    and `care_padding=False` when masked lanes never reach the result.

    ## Known false positives
    Read against 8 of its 9 findings on Liger-Kernel, FlagGems, TritonBench and the Triton
    tutorials (`benchmarks/triage_precision/ASC008.csv`). It now leaves out values whose load
    already passes `other=`: there the advice is followed, and the `tl.where` is either a redundant
    select (attention backward's `qT`, avg-pool's window sum) or deliberate, as in FlagGems' own
    Ascend max/min, which re-apply the fill only `if dtype is tl.int64`. What remains is the
    textbook shape, a masked load without `other=` followed by the same-mask `tl.where` (none
    false in the sample).

    ## Targets
    ascend.

    ## References
    triton-ascend performance guidelines (`docs/en/migration_guide/performance_guidelines.md`),
    Example 1; mindspore-ai/akg improvement skill.
    """

    code = "ASC008"
    name = "where-after-masked-load"
    message = "`tl.where` re-applies the load's mask to `{name}`; pass the fill value as `other=` in tl.load"
    fix_title = "Move the fill value into tl.load(..., other=...)"
    confidence = "high"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            masks = {}  # name -> dump of the mask it was loaded with
            filled: set[str] = set()  # names some load gives an `other=` fill
            for load in kernel.calls("load"):
                stmt = kernel.parent.get(load)
                mask = keyword(load, "mask", 1)
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and mask is not None:
                    if keyword(load, "other", 2) is not None:
                        filled.add(stmt.targets[0].id)  # the fill is in the load already
                    masks[stmt.targets[0].id] = ast.dump(mask)
            for name in filled:
                masks.pop(name, None)
            for call in kernel.calls("where"):
                if len(call.args) < 2 or not isinstance(call.args[1], ast.Name):
                    continue
                name = call.args[1].id
                if masks.get(name) == ast.dump(call.args[0]):
                    yield self.hit(call, name=name)
