from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import host_calls

DEVICE_SYNCS = {"torch.cuda.synchronize", "torch.npu.synchronize", "torch.xpu.synchronize",
                "torch.accelerator.synchronize", "torch_npu.npu.synchronize"}


class DeviceSynchronizeInForward(Rule):
    """## What it finds
    `torch.cuda.synchronize()` (or the NPU/accelerator equivalent, or `stream.synchronize()`) in a
    launcher or `ModelNew.forward`.

    ## Why it is slow
    It blocks the host until the device has drained every queued kernel, on every call. The next
    launch cannot be queued ahead of time, so the device sits idle for the launch latency between
    kernels, and anything overlapping with the model (data loading, other streams) stalls too.
    Timing code belongs in the harness, not in the model.

    ## Example
    ```python
    def forward(self, x):
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
        torch.cuda.synchronize()
        return out
    ```

    ## Use instead
    Return without synchronizing; stream order already guarantees the next kernel sees the result.

    ## Targets
    cuda, hip, ascend.

    ## References
    PyTorch CUDA semantics, "asynchronous execution".
    """

    code = "TRI010"
    name = "device-synchronize-in-forward"
    message = "`{call}` in `{function}` stalls the host until the device drains"
    fix_title = "Remove the synchronize; stream order is enough"
    confidence = "high"

    def check(self, ctx):
        for fn in ctx.hot_functions:
            for call in host_calls(fn):
                name = ctx.qualname(call.func)
                if name in DEVICE_SYNCS or (
                        name is None and isinstance(call.func, ast.Attribute) and call.func.attr == "synchronize"):
                    yield self.hit(call, call=ast.unparse(call.func) + "()", function=fn.node.name)
