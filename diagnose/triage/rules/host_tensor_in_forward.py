from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import host_calls

FROM_HOST = {"torch.tensor", "torch.as_tensor", "torch.from_numpy"}


class HostTensorInForward(Rule):
    """## What it finds
    `torch.tensor(...)`, `torch.as_tensor(...)` or `torch.from_numpy(...)` in a launcher or
    `ModelNew.forward`.

    ## Why it is slow
    The tensor is built from host data on every call and copied to the device from pageable memory,
    which synchronizes the stream before the copy starts: the same stall as `.item()`, plus an
    allocation. Constants belong in `__init__` (registered as buffers) or in the kernel as scalars
    or constexprs.

    ## Example
    ```python
    def forward(self, x):
        scale = torch.tensor([0.5, 2.0], device=x.device)
    ```

    ## Use instead
    ```python
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor([0.5, 2.0]))
    ```

    ## Known false positives
    Measured on 33 findings (Liger-Kernel, FlagGems, TritonBench, the Triton tutorials). Now
    accepted: tensors built without a device (`torch.prod(torch.tensor(batch))`,
    `torch.tensor([], dtype=d).element_size()`, `torch.as_tensor(lengths)`), which never leave the
    host, and tensors that are the function's result (`return torch.tensor(0.0, device=...)` for
    an empty or 0-d input). Still flagged though debatable: per-call data that has to reach the
    device, such as the grouped-GEMM tutorial's pointer and size arrays or a user's float `q`
    turned into a tensor; moving it to `__init__` is impossible, only batching it into one
    (pinned) copy helps.

    ## Targets
    cuda, hip, ascend.

    ## References
    PyTorch CUDA semantics ("pinned memory buffers"); `nn.Module.register_buffer`.
    """

    code = "TRI027"
    name = "host-tensor-in-forward"
    message = "`{call}` in `{function}` copies host data to the device on every call"
    fix_title = "Create the tensor once in __init__ (register_buffer) or pass scalars to the kernel"

    def check(self, ctx):
        for fn in ctx.hot_functions:
            parent = {child: node for node in ast.walk(fn.node) for child in ast.iter_child_nodes(node)}
            for call in host_calls(fn):
                name = ctx.qualname(call.func)
                if name not in FROM_HOST or not _to_device(call, parent):
                    continue  # no device: a host tensor for host arithmetic (torch.prod(torch.tensor(shape)))
                if _returned(call, parent):
                    continue  # the result itself (an empty or 0-d input's answer), not a per-call constant
                yield self.hit(call, call=ast.unparse(call.func) + "(...)", function=fn.node.name)


def _to_device(call: ast.Call, parent) -> bool:
    """`torch.tensor(..., device=d)` or `torch.xxx(...).to(d)` / `.cuda()` / `.npu()`."""
    if any(
        k.arg == "device" and not (isinstance(k.value, ast.Constant) and k.value.value in (None, "cpu"))
        for k in call.keywords
    ):
        return True
    up = parent.get(call)
    return isinstance(up, ast.Attribute) and up.attr in ("to", "cuda", "npu") and isinstance(parent.get(up), ast.Call)


def _returned(call: ast.Call, parent) -> bool:
    node = call
    while node in parent and not isinstance(node, ast.stmt):
        node = parent[node]
        if isinstance(node, ast.Call) and node is not call:
            return False  # an argument of something else: torch.equal(g, torch.tensor(1.0, ...))
    return isinstance(node, ast.Return)
