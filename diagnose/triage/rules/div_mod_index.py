from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import is_power_of_two, pointer_of


class DivModIndex(Rule):
    """## What it finds
    Block offsets split with `//` or `%` by a runtime value (`row = offs // n_cols`,
    `col = offs % n_cols`) and used to address memory.

    ## Why it is slow
    Flattened div/mod indexing hides the 2-D structure from the Ascend compiler: it cannot prove the
    inner axis contiguous, so the access becomes discrete and is lowered to scalar loops (a loop of
    single-element loads in triton-ascend's ttadapter IR). Integer division is also a slow vector
    op. Division by a power-of-two literal is a shift and is not flagged.

    ## Example
    ```python
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + (offs // n_cols) * stride + offs % n_cols)
    ```

    ## Use instead
    ```python
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :])
    ```
    or set `enable_linearize` for triton-ascend.

    ## Known false positives

    Not yet read against real code: on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials

    (825 files with kernels) it gave 250 findings at ascend:910b, none of them labelled yet, so its

    precision there is unknown.


    ## Targets
    ascend.

    ## References
    triton-ascend `compiler.py` (`enable_linearize` adds `--triton-linearize` to the ttadapter stage).
    """

    code = "ASC006"
    name = "div-mod-index"
    message = "`{expr}` splits block offsets with {op} by a runtime value; the access scalarizes"
    fix_title = "Index with 2-D offsets (rows[:, None], cols[None, :]) instead of // and %"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            address_names: set[str] = set()
            address_nodes: set[int] = set()
            for call in kernel.calls("load", "store"):
                ptr = pointer_of(call)
                if ptr is not None:
                    address_names |= kernel.sources(ptr)
                    address_nodes |= {id(n) for n in ast.walk(ptr)}
            for node in ast.walk(kernel.node):
                if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod))):
                    continue
                if isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) \
                        and is_power_of_two(node.right.value):
                    continue
                if isinstance(node.right, ast.Name) and node.right.id in kernel.constexprs:
                    continue
                if not kernel.is_block(node.left):
                    continue
                if id(node) in address_nodes or _assigned_name(kernel, node) & address_names:
                    yield self.hit(node, expr=ast.unparse(node),
                                   op="`//`" if isinstance(node.op, ast.FloorDiv) else "`%`")


def _assigned_name(kernel, node) -> set[str]:
    """The names the statement holding `node` assigns (`row = offs // n_cols` -> {'row'})."""
    for anc in kernel.ancestors(node):
        if isinstance(anc, ast.Assign):
            return {t.id for t in anc.targets if isinstance(t, ast.Name)}
        if isinstance(anc, ast.stmt):
            return set()
    return set()
