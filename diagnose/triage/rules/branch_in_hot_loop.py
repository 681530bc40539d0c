from __future__ import annotations

import ast

from diagnose.triage.rule import Rule


class BranchInHotLoop(Rule):
    """## What it finds
    An `if` inside a kernel loop whose condition is not compile-time (not only constexprs and module
    constants) and whose body assigns variables.

    ## Why it is slow
    The Ascend vector unit has no cheap divergent control flow inside a tiled loop: an `if` that
    updates loop-carried values is lowered to masked ops over whole blocks, or breaks the loop into
    scalar-controlled pieces that cannot be multibuffered (notes/ascend.md R9). Constexpr branches
    are free: they are resolved at compile time and are not flagged.

    ## Example
    ```python
    for start in range(0, n, BLOCK):
        x = tl.load(p + start + cols, mask=start + cols < n, other=0.0)
        if start + BLOCK > n:
            x = x * scale
        acc += x
    ```

    ## Use instead
    ```python
    for start in range(0, n, BLOCK):
        x = tl.load(p + start + cols, mask=start + cols < n, other=0.0)
        acc += tl.where(start + cols + BLOCK > n, x * scale, x)
    ```
    or peel the special iteration out of the loop.

    ## Targets
    ascend.

    ## References
    notes/ascend.md R9 (skills.sh ascend/agent-skills, triton-operator-performance-optim).
    """

    code = "ASC010"
    name = "branch-in-hot-loop"
    message = "runtime `if` inside a kernel loop updates values; it becomes masked or scalar code on the NPU"
    fix_title = "Use tl.where, a constexpr condition, or peel the iteration out of the loop"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            compile_time = set(kernel.constexprs) | set(ctx.constants)
            for loop in kernel.loops:
                for node in ast.walk(loop):
                    if not isinstance(node, ast.If) or kernel.enclosing_loop(node) is not loop:
                        continue
                    names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
                    if names <= compile_time:
                        continue
                    if any(isinstance(s, (ast.Assign, ast.AugAssign)) for b in node.body for s in ast.walk(b)):
                        yield self.hit(node.test)
