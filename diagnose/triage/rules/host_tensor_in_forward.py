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
            for call in host_calls(fn):
                name = ctx.qualname(call.func)
                if name in FROM_HOST:
                    yield self.hit(call, call=ast.unparse(call.func) + "(...)", function=fn.node.name)
