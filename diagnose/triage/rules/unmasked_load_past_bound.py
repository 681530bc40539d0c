from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword, pointer_of


class UnmaskedLoadPastBound(Rule):
    """## What it finds
    A `tl.load`/`tl.store` without `mask=` whose offsets come from an index that the same kernel
    bounds-checks elsewhere (`offs < n`): the author knew the block can run past the end.

    ## Why it is slow
    It is a correctness hazard before a performance one: the last block reads (or writes) past the
    tensor. Out-of-bounds reads may fault or return garbage that flows into reductions; some authors
    drop masks deliberately for speed, which is only safe when the size is a multiple of the block.
    Low confidence: the size may be guaranteed by construction.

    ## Example
    ```python
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs)
    ```

    ## Use instead
    ```python
    y = tl.load(y_ptr + offs, mask=mask)
    ```
    or branch on a constexpr `EVEN_N` that the launcher sets when `n % BLOCK == 0`.

    ## Known false positives
    Measured on 50 findings (FlagGems, TritonBench). Now accepted: deliberately peeled loops, where
    full tiles are read unmasked and only the partial tile is masked, in its own loop (the index is
    assigned again there: `range(0, N // T * T, T)` then `range(N // T * T, N, T)`, forward or
    reversed), in an `if remainder:` block, or after the loop that advanced the index over full
    blocks (`offs += BLOCK` in the loop, `mask=offs < N` after it); offsets wrapped into range with
    `% N` (also inside `tl.multiple_of`/`tl.max_contiguous`) or clamped with `tl.minimum`; indices
    that are data, such as a loaded gather index or an `argmax` result. The check now follows which
    assignment of a name reaches the access instead of matching names. Still misread: an index
    that is in range because the host sizes the buffer to whole blocks (a padded scratch buffer) is
    still flagged; nothing here can see the allocation.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 01-vector-add (masks); `tl.load` documentation (`mask`, `boundary_check`).
    """

    code = "TRI017"
    name = "unmasked-load-past-bound"
    message = "`tl.{op}` has no mask, yet `{index}` is bounds-checked elsewhere; the last block may run past the end"
    fix_title = "Pass the same mask to this access"
    confidence = "low"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if kernel.calls("make_block_ptr", "make_tensor_descriptor"):
                continue
            checks = [node for node in ast.walk(kernel.node) if isinstance(node, ast.Compare)
                      and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.LtE))
                      and _names(node.left) & kernel.block_names]
            if not checks:
                continue
            flow = _Flow(kernel)
            for call in kernel.calls("load", "store"):
                op = kernel.qualname(call.func).rsplit(".", 1)[-1]
                position = 1 if op == "load" else 2
                if keyword(call, "mask", position) is not None or keyword(call, "boundary_check"):
                    continue
                if any(isinstance(a, ast.If) for a in kernel.ancestors(call)):
                    continue  # EVEN_N-style specializations drop masks on purpose
                ptr = pointer_of(call)
                if ptr is None:
                    continue
                used = flow.facts(ptr, call)
                hit = sorted(name for check in checks
                             for name in flow.guarded(check, call, used) if name in kernel.block_names)
                if hit:
                    yield self.hit(call, op=op, index=hit[0])


WRAPS = {"multiple_of", "max_contiguous", "max_constancy"}
DATA = {"load", "argmax", "argmin", "max", "min", "sum", "reduce"}


def _names(expr) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


class _Flow:
    """Which assignment of a name reaches a use, well enough to tell a peeled loop's two copies of
    `offs` apart: the last plain assignment above the use, the updates (`+=`) after it, and the
    assignments below the use in a loop around it (carried to the next iteration)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.stmts: dict[int, ast.AST] = {}
        self.defs: dict[str, list[tuple[ast.AST, ast.AST, bool]]] = {}
        for node in ast.walk(kernel.node):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name, value in _pairs(target, node.value):
                        self.defs.setdefault(name, []).append((node, value, isinstance(node, ast.AugAssign)))
            elif isinstance(node, ast.For):
                for name in _names(node.target):
                    self.defs.setdefault(name, []).append((node, node.iter, False))
        for found in self.defs.values():
            found.sort(key=lambda d: (d[0].lineno, d[0].col_offset))

    def region(self, node) -> ast.AST:
        return next((a for a in self.kernel.ancestors(node)
                     if isinstance(a, (ast.For, ast.While, ast.If, ast.FunctionDef))), self.kernel.node)

    def inside(self, node, outer) -> bool:
        return outer is node or outer in self.kernel.ancestors(node)

    def reaching(self, name: str, use) -> list[tuple[ast.AST, ast.AST, bool]]:
        defs = self.defs.get(name, [])
        before = [d for d in defs if d[0].lineno < use.lineno or self.inside(use, d[0])]
        plain = [d for d in before if not d[2]]
        if not plain:
            return defs
        last = plain[-1]
        loops = [a for a in self.kernel.ancestors(use) if isinstance(a, (ast.For, ast.While))]
        carried = [d for d in defs if d[0].lineno >= use.lineno and d is not last
                   and any(self.inside(d[0], loop) for loop in loops)]
        return [last] + [d for d in before if d[2] and d[0].lineno > last[0].lineno] + carried

    def facts(self, expr, use) -> set[tuple[str, int]]:
        """(name, assignment) pairs an index expression depends on. Stops at values reduced modulo a
        bound (`x % n`: in range by construction) and at data (a loaded value, a reduction)."""
        out: set[tuple[str, int]] = set()
        todo = [(expr, use)]
        seen = set()
        while todo:
            node, at = todo.pop()
            for name in _names(node):
                for stmt, value, _ in self.reaching(name, at):
                    key = (name, id(stmt))
                    self.stmts[id(stmt)] = stmt
                    if key in seen:
                        continue
                    seen.add(key)
                    if _wrapped(value, self.kernel):
                        continue
                    out.add(key)
                    if not _is_data(value, self.kernel):
                        todo.append((value, stmt))
        return out

    def guarded(self, check, access, used: set[tuple[str, int]]) -> set[str]:
        """Names of the access's index that this bounds check tests on the same values. The check
        speaks for the access when its block encloses the access and it is not the masked remainder
        after a loop that advances the index over full blocks (a peeled loop)."""
        if not self.inside(access, self.region(check)):
            return set()
        common = self.facts(check.left, check) & used
        for loop in (a for a in self.kernel.ancestors(access) if isinstance(a, (ast.For, ast.While))):
            if not self.inside(check, loop) and check.lineno > loop.end_lineno and any(
                    self.inside(self.stmts[key], loop) for _, key in common):
                return set()
        return {name for name, _ in common}


def _pairs(target, value):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        pair = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
        for i, elt in enumerate(target.elts):
            yield from _pairs(elt.value if isinstance(elt, ast.Starred) else elt, value.elts[i] if pair else value)


def _wrapped(value, kernel) -> bool:
    """`(...) % n`, `tl.minimum(x, n - 1)`, possibly inside `tl.multiple_of` / `tl.max_contiguous`."""
    while isinstance(value, ast.Call) and (kernel.qualname(value.func) or "").rsplit(".", 1)[-1] in WRAPS \
            and value.args:
        value = value.args[0]
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
        return True
    return isinstance(value, ast.Call) and (kernel.qualname(value.func) or "").rsplit(".", 1)[-1] == "minimum"


def _is_data(value, kernel) -> bool:
    return any(isinstance(n, ast.Call) and (kernel.qualname(n.func) or "").startswith("triton.language.")
               and kernel.qualname(n.func).rsplit(".", 1)[-1] in DATA for n in ast.walk(value))
