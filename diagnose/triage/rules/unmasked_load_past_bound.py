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
    assignment of a name reaches the access instead of matching names. Also accepted now: buffers
    the host pads to whole tiles. When every launch (through `@triton.jit` helpers up to the
    launched kernel) passes, for each pointer of the address, a tensor whose length the launching
    function rounds up to a multiple of C (`triton.cdiv(n, C) * C`, `(n + C - 1) // C * C`,
    `(n // C + 1) * C`, `math.ceil(n / C) * C`), allocated at that size or padded to it with
    `F.pad(x, (0, padded - n))`, then reshaped or scanned (`view`, `cumsum`), the access is in bounds
    by construction; a tile known at the launch must divide C, an unknown one (`min(2048,
    next_power_of_2(n))`) is trusted to fit. Measured on FlagGems' Kunlunxin `unique.py` (the padded
    cumsum buffer): held-out labels 3 true, 2 false (60%) before, 3 true, 0 false after; on the first
    label set the same two lines are labelled true (for cuda), so there they count as 2 true lost
    (5 true before, 3 after): the two sets disagree on these rows and the host code supports the
    held-out reading (the reads stay inside the padding). Whole corpus: 10 findings before, 6 after.
    Still misread: padding that the host builds some other way (slicing a larger buffer, a size
    computed in another file) is flagged.
    Held-out (mamba's chunked scans, 2026-12-08): 4 of 5 findings false. The mask bounded a global
    position (`offs_seq = chunk_start + offs < seqlen`) while the unmasked access wrote or read a
    chunk-sized scratch tile by the lane alone (`offs[:, None] * stride_row + offs[None, :]`). A check
    now speaks only for accesses whose address uses the names it compares, not what they were built
    from: 4 false gone, the true one (the same chunk's `offs_seq` read unmasked) kept, no labelled
    finding of the earlier sets lost. An access by the lane next to a check on `start + lane` written
    inline (no name) is still flagged.

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
        helper_calls: dict = {}  # filled on the first hit: @triton.jit function -> (caller, call)
        for kernel in ctx.kernels.values():
            if kernel.calls("make_block_ptr", "make_tensor_descriptor"):
                continue
            checks = [
                node
                for node in ast.walk(kernel.node)
                if isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], (ast.Lt, ast.LtE))
                and _names(node.left) & kernel.block_names
            ]
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
                hit = sorted(
                    name for check in checks for name in flow.guarded(check, call, used) if name in kernel.block_names
                )
                if hit and not _host_padded(ctx, kernel, ptr, flow, used, helper_calls):
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
        return next(
            (a for a in self.kernel.ancestors(node) if isinstance(a, (ast.For, ast.While, ast.If, ast.FunctionDef))),
            self.kernel.node,
        )

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
        carried = [
            d
            for d in defs
            if d[0].lineno >= use.lineno and d is not last and any(self.inside(d[0], loop) for loop in loops)
        ]
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
        speaks for the access when the names it compares (not what they were built from) reach the
        access's address, its block encloses the access and it is not the masked remainder after a
        loop that advances the index over full blocks (a peeled loop). A check on a global position
        (`offs_seq = chunk_start + offs < seqlen`) says nothing of an access by the local offset alone
        (`offs`, into a chunk-sized scratch tile)."""
        if not self.inside(access, self.region(check)):
            return set()
        checked = {(name, id(stmt)) for name in _names(check.left) for stmt, _, _ in self.reaching(name, check)}
        common = checked & used  # `facts` recorded the statements of `used` (and so of these)
        for loop in (a for a in self.kernel.ancestors(access) if isinstance(a, (ast.For, ast.While))):
            if (
                not self.inside(check, loop)
                and check.lineno > loop.end_lineno
                and any(self.inside(self.stmts[key], loop) for _, key in common)
            ):
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
    while (
        isinstance(value, ast.Call) and (kernel.qualname(value.func) or "").rsplit(".", 1)[-1] in WRAPS and value.args
    ):
        value = value.args[0]
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
        return True
    return isinstance(value, ast.Call) and (kernel.qualname(value.func) or "").rsplit(".", 1)[-1] == "minimum"


def _is_data(value, kernel) -> bool:
    return any(
        isinstance(n, ast.Call)
        and (kernel.qualname(n.func) or "").startswith("triton.language.")
        and kernel.qualname(n.func).rsplit(".", 1)[-1] in DATA
        for n in ast.walk(value)
    )


# Host-padded buffers ------------------------------------------------------------------------------

TORCH_MAKERS = {"empty", "zeros", "ones", "full", "randn", "rand", "new_empty", "new_zeros", "new_ones", "new_full"}
MAX_DEPTH = 24  # host assignments followed from the launch back to the allocation
SAME_NUMEL = {
    "view",
    "reshape",
    "flatten",
    "contiguous",
    "clone",
    "to",
    "float",
    "half",
    "bfloat16",
    "int",
    "long",
    "cumsum",
    "cumprod",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
}


def _host_padded(ctx, kernel, ptr, flow, used, helper_calls: dict) -> bool:
    """Whether every buffer the access can read was sized by the host to a whole number of tiles:
    each pointer parameter of the address is passed, at every launch (through `@triton.jit` helpers
    up to the launched kernel), a tensor whose length the launching function rounds up to a multiple
    of some C (`triton.cdiv(n, C) * C`, `(n + C - 1) // C * C`, `(n // C + 1) * C`, `math.ceil(n / C) *
    C`), allocated with that size or padded to it (`F.pad(x, (0, padded - n))`), then reshaped or
    scanned (`view`, `cumsum`). A tile of the index (`tl.arange(0, T)`) known at the launch must divide
    C; an unknown tile is trusted to fit the padding."""
    params = _pointer_params(kernel, ptr, set())
    if not params:
        return False
    if not helper_calls:
        helper_calls[None] = []
        for other in ctx.kernels.values():
            for call in ast.walk(other.node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ctx.kernels:
                    helper_calls.setdefault(call.func.id, []).append((other, call))
    tiles = {
        n.args[1].id
        for key in used
        if key[1] in flow.stmts
        for n in ast.walk(flow.stmts[key[1]])
        if isinstance(n, ast.Call)
        and (kernel.qualname(n.func) or "").endswith("language.arange")
        and len(n.args) == 2
        and isinstance(n.args[1], ast.Name)
    }
    for param in params:
        passed = _launch_args(ctx, kernel, param, 0, helper_calls)
        if not passed:
            return False
        for launch, arg in passed:
            multiple = _padded(ctx, launch.function or ctx.tree, arg, launch.node.lineno, 0)
            if multiple is None:
                return False
            c = ctx.evaluator.value(multiple, {}) if ctx.evaluator is not None else None
            if isinstance(c, int) and not isinstance(c, bool):
                for variant in ctx.variants(ctx.kernels[launch.kernel]):
                    if any(isinstance(t, int) and t > 0 and c % t for t in map(variant.int, tiles)):
                        return False
    return True


def _pointer_params(kernel, expr, seen: set) -> set[str] | None:
    """Non-constexpr parameters added into a pointer expression (`x_ptr + offs`), through assignments."""
    if isinstance(expr, ast.Name):
        if expr.id in kernel.params:
            return set() if expr.id in kernel.constexprs else {expr.id}
        if expr.id in seen:
            return set()
        out: set[str] = set()
        for value in kernel.assigns.get(expr.id, ()):
            found = _pointer_params(kernel, value, seen | {expr.id})
            if found is None:
                return None
            out |= found
        return out
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        left, right = _pointer_params(kernel, expr.left, seen), _pointer_params(kernel, expr.right, seen)
        return None if left is None or right is None else left | right
    return set()


def _launch_args(ctx, kernel, param: str, depth: int, helper_calls: dict) -> list | None:
    """(launch, host expression) for a parameter at every launch of the kernel and, for a
    `@triton.jit` helper, at every launch of the kernels that call it with one of their parameters.
    None when some caller passes anything else or nothing launches it."""
    out = [(launch, launch.arg_nodes(kernel.params).get(param)) for launch in ctx.launches_of(kernel)]
    if any(arg is None for _, arg in out):
        return None
    index = kernel.params.index(param)
    for other, call in helper_calls.get(kernel.name, ()):
        if other is not kernel:
            positional = [a for a in call.args if not isinstance(a, ast.Starred)]
            arg = (
                positional[index]
                if index < len(positional) and len(positional) == len(call.args)
                else keyword(call, param)
            )
            if depth >= 2 or not isinstance(arg, ast.Name) or arg.id not in other.params:
                return None
            found = _launch_args(ctx, other, arg.id, depth + 1, helper_calls)
            if not found:
                return None
            out += found
    return out or None


def _padded(ctx, scope, expr, line: int, depth: int):
    """C when the host tensor `expr` has a length rounded up to a multiple of C, else None."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, ast.Name):
        value = _assigned(ctx, scope, expr.id, line)
        return (
            _padded(ctx, scope, value, value_line(ctx, scope, expr.id, line), depth + 1) if value is not None else None
        )
    if not isinstance(expr, ast.Call):
        return None
    name = ctx.qualname(expr.func) or ""
    short = name.rsplit(".", 1)[-1] if name else expr.func.attr if isinstance(expr.func, ast.Attribute) else ""
    method = isinstance(expr.func, ast.Attribute) and not name.startswith("torch.")
    if short == "pad" and name.startswith("torch.nn.functional") and len(expr.args) >= 2:
        widths = expr.args[1]
        if isinstance(widths, (ast.Tuple, ast.List)) and len(widths.elts) == 2:
            return _padding(ctx, scope, widths.elts[1], line, depth + 1)
        return None
    if short in TORCH_MAKERS and (name.startswith("torch.") or method):
        size = expr.args[-1] if expr.args else keyword(expr, "size")
        if short in ("full", "new_full"):
            size = expr.args[0] if expr.args else keyword(expr, "size")
        if isinstance(size, (ast.Tuple, ast.List)) and size.elts:
            size = size.elts[-1]
        return _rounded(ctx, scope, size, line, depth + 1) if size is not None else None
    if short in SAME_NUMEL:
        inner = expr.func.value if method else expr.args[0] if expr.args else None
        return _padded(ctx, scope, inner, line, depth + 1) if inner is not None else None
    return None


def _padding(ctx, scope, expr, line, depth):
    """`padded - n` (or its name) with `padded` rounded up to a multiple of C: C."""
    if isinstance(expr, ast.Name):
        value = _assigned(ctx, scope, expr.id, line)
        return _padding(ctx, scope, value, line, depth + 1) if value is not None and depth < MAX_DEPTH else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Sub):
        return _rounded(ctx, scope, expr.left, line, depth + 1)
    return None


def _rounded(ctx, scope, expr, line, depth):
    """C when `expr` is a length rounded up to a multiple of C: `X * C` or `C * X` with X a ceiling
    division by C (`triton.cdiv(n, C)`, `(n + C - 1) // C`, `n // C + 1`, `math.ceil(n / C)`)."""
    if depth > MAX_DEPTH or expr is None:
        return None
    if isinstance(expr, ast.Name):
        value = _assigned(ctx, scope, expr.id, line)
        return _rounded(ctx, scope, value, line, depth + 1) if value is not None else None
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult)):
        return None
    for x, c in ((expr.left, expr.right), (expr.right, expr.left)):
        if _ceil_div(ctx, x, c):
            return c
    return None


def _ceil_div(ctx, x, c) -> bool:
    same = ast.dump(c)
    if (
        isinstance(x, ast.Call)
        and (ctx.qualname(x.func) or "") in ("triton.cdiv", "triton.language.cdiv")
        and len(x.args) == 2
    ):
        return ast.dump(x.args[1]) == same
    if isinstance(x, ast.Call) and ctx.qualname(x.func) == "math.ceil" and len(x.args) == 1:
        d = x.args[0]
        return isinstance(d, ast.BinOp) and isinstance(d.op, ast.Div) and ast.dump(d.right) == same
    if isinstance(x, ast.BinOp) and isinstance(x.op, ast.FloorDiv):  # (n + C - 1) // C
        return ast.dump(x.right) == same and isinstance(x.left, ast.BinOp) and isinstance(x.left.op, (ast.Add, ast.Sub))
    if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Add):  # n // C + 1
        return any(
            isinstance(t, ast.BinOp) and isinstance(t.op, ast.FloorDiv) and ast.dump(t.right) == same
            for t in (x.left, x.right)
        ) and any(isinstance(t, ast.Constant) and t.value == 1 for t in (x.left, x.right))
    return False


def _assignment(ctx, scope, name: str, line: int):
    """The last `name = ...` above `line` in the host function (indexed once per function)."""
    index = ctx.indexed("assignments", scope, _assignments_by_name)
    above = [n for n in index.get(name, ()) if n.lineno < line]
    return max(above, key=lambda n: n.lineno) if above else None


def _assignments_by_name(scope) -> dict[str, list[ast.Assign]]:
    index: dict[str, list[ast.Assign]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            index.setdefault(node.targets[0].id, []).append(node)
    return index


def _assigned(ctx, scope, name: str, line: int):
    """The value of the last `name = ...` above `line` in the host function."""
    node = _assignment(ctx, scope, name, line)
    return node.value if node is not None else None


def value_line(ctx, scope, name: str, line: int) -> int:
    node = _assignment(ctx, scope, name, line)
    return node.lineno if node is not None else line
