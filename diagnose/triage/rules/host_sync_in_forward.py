from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import host_calls

SYNCING = {"item", "cpu", "tolist", "numpy"}


class HostSyncInForward(Rule):
    """## What it finds
    `.item()`, `.cpu()`, `.tolist()` or `.numpy()` in a launcher or `ModelNew.forward`.

    ## Why it is slow
    Reading a device value on the host waits for every kernel queued before it, so the CPU stops
    running ahead of the GPU/NPU: launch latency is exposed on every call and the device idles while
    Python catches up. On Ascend `tensor.item()` in the hot path forces the same CPU-NPU sync
    (notes/ascend.md R9).

    ## Example
    ```python
    def forward(self, x):
        n = int(x.abs().max().item())
        kernel[(n,)](x, ...)
    ```

    ## Use instead
    Keep the value on the device and read it in the kernel (`tl.load(n_ptr)`), or compute it from
    shapes, which are host values already: `x.shape[0]`, `x.numel()`.

    ## Targets
    cuda, hip, ascend.

    ## References
    PyTorch CUDA semantics, "asynchronous execution"; notes/ascend.md R9.
    """

    code = "TRI009"
    name = "host-sync-in-forward"
    message = "`.{method}()` in `{function}` waits for the device on every call"
    fix_title = "Keep the value on the device, or derive it from tensor shapes"
    confidence = "high"

    def check(self, ctx):
        for fn in ctx.hot_functions:
            for call in host_calls(fn):
                if isinstance(call.func, ast.Attribute) and call.func.attr in SYNCING and not call.args:
                    yield self.hit(call, method=call.func.attr, function=fn.node.name)
