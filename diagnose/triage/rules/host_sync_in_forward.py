from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import host_calls

SYNCING = {"item", "cpu", "tolist", "numpy"}


class HostSyncInForward(Rule):
    """## What it finds
    `.item()`, `.cpu()`, `.tolist()` or `.numpy()` in a launcher or `ModelNew.forward`. Not flagged:
    a value that sizes a result (an allocation's shape, a slice bound: the data-dependent output size
    of nonzero, unique, masked_select, repeat_interleave, which the host must know), a read on an `if`
    branch that returns or raises without launching (a 0-d or empty-input special case), and
    functions named `test...` (a test that launches to check results).

    ## Why it is slow
    Reading a device value on the host waits for every kernel queued before it, so the CPU stops
    running ahead of the GPU/NPU: launch latency is exposed on every call and the device idles while
    Python catches up. On Ascend `tensor.item()` in the hot path forces the same CPU-NPU sync.

    ## Example
    ```python
    def forward(self, x):
        n = int(x.abs().max().item())
        kernel[(n,)](x, ...)
    ```

    ## Use instead
    Keep the value on the device and read it in the kernel (`tl.load(n_ptr)`), or compute it from
    shapes, which are host values already: `x.shape[0]`, `x.numel()`.

    ## Known false positives
    Now accepted (13 of 25 labelled findings on Liger-Kernel, FlagGems and TritonBench were false, all
    of these shapes): the output-size read of nonzero / unique / masked_select / repeat_interleave
    (`n = cumsum[-1].item(); out = torch.empty((n,), ...)` or `out[:n]`), followed through assignments
    such as `shape[dim] = n`; `.item()` on the 0-d-input branch of masked_fill that returns before the
    launch; `.cpu().numpy()` in a `test_*` function. Still flagged and debatable: `.item()` that turns
    a Tensor argument into a Python scalar under an `isinstance(x, torch.Tensor)` test (linspace,
    logspace, masked_fill, fill): it syncs only on that overload, as torch itself does, though the
    kernel could load the value instead; and an `is_cuda` guard meant for host-side values, which on an
    NPU is False for device tensors too. After the change the 12 labelled findings still reported are
    9 true (loss normalizers read back only to be passed as a kernel scalar) and 3 debatable.

    ## Targets
    cuda, hip, ascend.

    ## References
    PyTorch CUDA semantics, "asynchronous execution"; skills.sh ascend/agent-skills,
    triton-operator-performance-optim.
    """

    code = "TRI009"
    name = "host-sync-in-forward"
    message = "`.{method}()` in `{function}` waits for the device on every call"
    fix_title = "Keep the value on the device, or derive it from tensor shapes"
    confidence = "high"

    def check(self, ctx):
        launchers = {f.node.name for f in ctx.hot_functions if f.launches}
        for fn in ctx.hot_functions:
            if fn.node.name.startswith("test"):
                continue  # a test function that launches to check results, not a hot path
            syncs = [
                call
                for call in host_calls(fn)
                if isinstance(call.func, ast.Attribute) and call.func.attr in SYNCING and not call.args
            ]
            if not syncs:
                continue
            parents = {child: node for node in ast.walk(fn.node) for child in ast.iter_child_nodes(node)}
            for call in syncs:
                if _on_exit_branch(call, parents, fn, launchers) or _sizes_a_result(call, parents, fn):
                    continue
                yield self.hit(call, method=call.func.attr, function=fn.node.name)


# Calls whose positional arguments are sizes: a host value used there sizes a tensor.
ALLOCATORS = {
    "empty",
    "zeros",
    "ones",
    "full",
    "empty_strided",
    "rand",
    "randn",
    "randint",
    "randperm",
    "arange",
    "new_empty",
    "new_zeros",
    "new_ones",
    "new_full",
    "narrow",
    "resize_",
}
# Calls a size flows through unchanged (int(n), max(n, 1), (n, d) ...).
PASS_THROUGH = {"int", "max", "min", "abs", "round", "tuple", "list"}


def _sizes_a_result(call: ast.Call, parents: dict, fn) -> bool:
    """Whether the synced value sizes a tensor (an allocation's shape, a slice bound): a data-dependent
    output size (nonzero, unique, masked_select, repeat_interleave) that the host has to know."""
    if _in_size_position(call, parents):
        return True
    tainted: set[str] = set()
    assigns = [
        n
        for n in ast.walk(fn.node)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None
    ]
    changed = True
    while changed:
        changed = False
        for node in assigns:
            if not any(n is call or (isinstance(n, ast.Name) and n.id in tainted) for n in ast.walk(node.value)):
                continue
            targets = list(node.targets if isinstance(node, ast.Assign) else [node.target])
            while targets:
                target = targets.pop()
                if isinstance(target, (ast.Tuple, ast.List)):
                    targets.extend(target.elts)
                elif isinstance(target, (ast.Subscript, ast.Starred)):
                    targets.append(target.value)  # out_shape[dim] = n taints out_shape
                elif isinstance(target, ast.Name) and target.id not in tainted:
                    tainted.add(target.id)
                    changed = True
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in tainted and _in_size_position(n, parents)
        for n in ast.walk(fn.node)
    )


def _in_size_position(node: ast.AST, parents: dict) -> bool:
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Slice):
            return True
        if isinstance(parent, ast.Call):
            func = parent.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if child in parent.args and name in ALLOCATORS:
                return True
            if child in parent.args and name in PASS_THROUGH:
                child, parent = parent, parents.get(parent)
                continue
            return False
        if isinstance(parent, ast.keyword):
            if parent.arg != "size":
                return False
        elif not isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.Starred)):
            return False
        child, parent = parent, parents.get(parent)
    return False


def _on_exit_branch(call: ast.Call, parents: dict, fn, launchers: set[str]) -> bool:
    """Whether the sync sits on an `if` branch that returns (or raises) without launching anything: a
    special case (a 0-d input, an empty tensor) handled before the kernel path, not every call."""
    child, parent = call, parents.get(call)
    while parent is not None and parent is not fn.node:
        if isinstance(parent, ast.If):
            branch = parent.body if child in parent.body else parent.orelse if child in parent.orelse else None
            if (
                branch
                and isinstance(branch[-1], (ast.Return, ast.Raise))
                and not any(
                    isinstance(n, ast.Call)
                    and (isinstance(n.func, ast.Subscript) or (isinstance(n.func, ast.Name) and n.func.id in launchers))
                    for stmt in branch
                    for n in ast.walk(stmt)
                )
            ):
                return True
        child, parent = parent, parents.get(parent)
    return False
