from __future__ import annotations

import ast
import re

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import host_calls

DEVICE_SYNCS = {
    "torch.cuda.synchronize",
    "torch.npu.synchronize",
    "torch.xpu.synchronize",
    "torch.accelerator.synchronize",
    "torch_npu.npu.synchronize",
}


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

    ## Known false positives
    A synchronize that works around a toolchain failure is not timing code: Liger-Kernel's Ascend
    neighborhood attention syncs the stream after its kernels because, its comment says,
    consecutive forwards hang on triton-ascend 3.2.2 otherwise (1 of 1 finding, both targets);
    removing it would bring the hang back. A synchronize whose own comment, or the comment block
    right above it, names a failure it prevents (hang, deadlock, race, crash, corruption, bug,
    workaround, "otherwise") is no longer reported. A bare `# wait for the kernel` still is.

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
                    name is None and isinstance(call.func, ast.Attribute) and call.func.attr == "synchronize"
                ):
                    if _justified(ctx, call.lineno):
                        continue
                    yield self.hit(call, call=ast.unparse(call.func) + "()", function=fn.node.name)


# A comment that says the synchronize prevents a failure: a hang, a race, a toolchain bug.
JUSTIFIED = re.compile(
    r"\b(hang|hangs|deadlock\w*|race|racy|workaround|work around|bug|crash\w*|corrupt\w*"
    r"|otherwise)\b",
    re.I,
)


def _justified(ctx, line: int) -> bool:
    """Whether the comment on the call's line, or the comment block right above it, explains the
    synchronize as preventing a failure (a deliberate workaround, not timing code)."""
    text = ctx.line(line)
    comments = [text[text.index("#") :]] if "#" in text else []
    above = line - 1
    while above > 0 and ctx.line(above).strip().startswith("#"):
        comments.append(ctx.line(above))
        above -= 1
    return any(JUSTIFIED.search(c) for c in comments)
