from __future__ import annotations

import ast
import copy
import re

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import MEMORY_ACCESSES, pointer_of


class MultiPassRowReload(Rule):
    """## What it finds
    The same pointer expression loaded in two or more sibling loops over the same range: a row read
    from memory once per pass (max, then sum, then normalize). It is reported only when at least two
    of those passes are statistics passes (the loop reduces and writes nothing), so that one pass
    more than the algorithm needs reads the row: a pass that writes (the normalize pass, the `dx` pass
    of a backward) is required once the row does not fit a block, and one statistics pass before it is
    the minimum.

    ## Why it is slow
    Each pass streams the whole row from HBM again, so a memory-bound kernel moves 2-3x the bytes it
    needs. When the row fits in one block it can stay in registers (one load, `BLOCK =
    next_power_of_2(n_cols)`); when it does not, online algorithms (online softmax, Welford) fuse the
    statistics passes so only the final pass re-reads.

    ## Example
    ```python
    for start in range(0, n_cols, BLOCK):
        m = tl.maximum(m, tl.load(row + start + cols, mask=start + cols < n_cols, other=-inf))
    for start in range(0, n_cols, BLOCK):
        s += tl.exp(tl.load(row + start + cols, mask=start + cols < n_cols, other=-inf) - mx)
    ```

    ## Use instead
    ```python
    cols = tl.arange(0, BLOCK)                      # BLOCK = next_power_of_2(n_cols)
    x = tl.load(row + cols, mask=cols < n_cols, other=-float("inf"))
    y = tl.exp(x - tl.max(x, 0))
    tl.store(out + cols, y / tl.sum(y, 0), mask=cols < n_cols)
    ```

    ## Known false positives
    Measured on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials (25 labelled findings
    of 203 on cuda: 7 true, 15 false, 3 debatable; 29 findings remain per target, none of them
    false on reading). Now accepted: two-pass online softmax / log-softmax
    and every "one statistics pass, then one pass that writes" kernel (RMSNorm, weight norm, per-row
    int8 quantization, group norm with fused mean and E[x^2]); backward kernels whose second pass
    writes `dx` (softmax, layer norm, RMS norm, cross-entropy); loops in the two branches of an
    `if`/`else` (`if NEED_LOOP:` ... `else:`), which are alternatives, not passes; re-loads of a scalar
    (a per-channel weight in an outer loop), which read no row. Still reported, and arguable: the
    normalize pass of a mean / variance / normalize kernel is flagged with the variance pass although
    it is the variance pass that goes; a second statistics pass that no online algorithm or algebra
    can fold into the first (a mean absolute deviation, a sort-based threshold) would be flagged too.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 02-fused-softmax. On Ascend too, multi-pass algorithms are best fused when the row
    fits a block.
    """

    code = "TRI007"
    name = "multi-pass-row-reload"
    message = (
        "`{pointer}` is loaded again in pass {n} over the same range (first load at line {first}); "
        "the row is read {total} times, {stats} of them only to reduce"
    )
    fix_title = "Keep the row in registers, or fuse the passes with an online algorithm"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            # pointer key -> [(loop, first load of the pointer in that loop)], loops in source order
            passes: dict[tuple, list[tuple[ast.For, ast.Call]]] = {}
            for loop in kernel.loops:
                if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name):
                    continue
                parent = kernel.parent.get(loop)
                scope = (id(parent), _statement_list(parent, loop), ast.dump(loop.iter))
                local = _assigned_in(loop)
                for load in kernel.calls("load"):
                    ptr = pointer_of(load)
                    if ptr is None or kernel.enclosing_loop(load) is not loop or not kernel.is_block(ptr):
                        continue  # a scalar re-load reads no row
                    found = passes.setdefault((scope, _normalized(ptr, local, loop.target.id)), [])
                    if not found or found[-1][0] is not loop:
                        found.append((loop, load))
            for found in passes.values():
                stats = sum(1 for loop, _ in found if not _writes(kernel, loop))
                if len(found) < 2 or stats < 2:
                    continue  # one statistics pass and the passes that write: what the algorithm needs
                first = found[0][1]
                for n, (_, load) in enumerate(found[1:], 2):
                    yield self.hit(
                        load,
                        secondary=(first,),
                        confidence="high" if len(found) >= 3 else None,
                        pointer=ast.unparse(pointer_of(load)),
                        n=n,
                        first=first.lineno,
                        total=len(found),
                        stats=stats,
                    )


WRITES = tuple("triton.language." + n for n in MEMORY_ACCESSES if n != "load")


def _writes(kernel, loop: ast.For) -> bool:
    """Whether the loop stores (or atomically updates) memory anywhere in its body: an output pass."""
    return any(loop in kernel.ancestors(call) for call in kernel.calls(*WRITES))


def _statement_list(parent: ast.AST | None, node: ast.stmt) -> str:
    """Which statement list of `parent` holds `node` (`body`, `orelse`, ...): loops in the two branches
    of an `if` share a parent but are alternatives, not passes."""
    for name in ("body", "orelse", "finalbody", "handlers"):
        if any(s is node for s in getattr(parent, name, ()) or ()):
            return name
    return ""


def _assigned_in(loop: ast.For) -> dict[str, ast.expr]:
    out = {}
    for node in ast.walk(loop):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _normalized(ptr: ast.expr, local: dict[str, ast.expr], var: str) -> str:
    """The pointer's text with names assigned in the loop inlined once and the loop variable renamed,
    so `x_row + off + cols` matches `x_row + start + cols` in the next loop."""

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node):
            return copy.deepcopy(local[node.id]) if node.id in local else node

    text = ast.unparse(Inline().visit(copy.deepcopy(ptr)))
    return re.sub(rf"\b{re.escape(var)}\b", "$i", text)
