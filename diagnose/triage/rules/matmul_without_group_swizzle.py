from __future__ import annotations

import ast

from diagnose.triage.rule import Rule


class MatmulWithoutGroupSwizzle(Rule):
    """## What it finds
    A tiled matmul (a `tl.dot` in a loop, output tiles indexed by two program-id-derived indices,
    each scaled by a block size) that maps program ids to tiles in plain row-major order: no
    `GROUP_SIZE_M` swizzle and no `tl.swizzle2d`.

    ## Why it is slow
    Programs run roughly in id order. Row-major order walks a whole row of output tiles before the
    next, so the B panel is re-read from HBM for every row of tiles; grouping GROUP_M rows of tiles
    together keeps the A and B panels in L2 and cuts DRAM traffic substantially on large matrices
    (Triton's tutorial measures ~10% on A100; Ascend reports the same for swizzled block order).

    ## Example
    ```python
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    ```

    ## Use instead
    ```python
    pid = tl.program_id(0)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 03-matrix-multiplication ("L2 cache optimizations"); notes/ascend.md R10.
    """

    code = "TRI019"
    name = "matmul-without-group-swizzle"
    message = "output tiles follow program ids in row-major order (no GROUP_M swizzle); B is re-read from HBM for each tile row"
    fix_title = "Group GROUP_SIZE_M tile rows (tutorial swizzle) or use tl.swizzle2d"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if not kernel.has_dot or not any(_contains_dot(kernel, loop) for loop in kernel.loops):
                continue
            if kernel.calls("swizzle2d") or any("GROUP" in n.upper() for n in (*kernel.params, *kernel.assigns)):
                continue
            pids = kernel.calls("program_id")
            if pids and len(_tile_blocks(kernel)) >= 2:
                yield self.hit(pids[0])


def _contains_dot(kernel, loop) -> bool:
    inside = {id(n) for n in ast.walk(loop)}
    return any(id(c) in inside for c in kernel.calls("dot"))


def _tile_blocks(kernel) -> set[str]:
    """Constexpr block sizes multiplied by a program-id-derived index: `pid_m * BLOCK_M`."""
    pid_calls = {id(c) for c in kernel.calls("program_id")}
    derived = {name for name, values in kernel.assigns.items()
               if any(id(n) in pid_calls for v in values for n in ast.walk(v))}
    changed = True
    while changed:  # names computed from pid-derived names (pid_m = pid // num_pid_n)
        changed = False
        for name, values in kernel.assigns.items():
            if name not in derived and any(isinstance(n, ast.Name) and n.id in derived
                                           for v in values for n in ast.walk(v)):
                derived.add(name)
                changed = True
    out = set()
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                if isinstance(a, ast.Name) and a.id in derived and isinstance(b, ast.Name) \
                        and b.id in kernel.constexprs:
                    out.add(b.id)
    return out
