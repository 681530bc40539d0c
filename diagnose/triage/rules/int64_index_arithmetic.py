from __future__ import annotations

import ast

from diagnose.triage.kernel import BLOCK_MAKERS, TL, Kernel
from diagnose.triage.kernel import REDUCTIONS as KERNEL_REDUCTIONS
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword, pointer_of

INT64 = ("triton.language.int64", "triton.language.uint64")
# Where a finding starts: signed int64, the width index arithmetic is widened to. A value made
# unsigned 64-bit (`row.to(tl.uint64) * n_cols + col`) is a bit pattern: a philox counter split into
# 32-bit words, a packed sort key, a hash; its 64 bits are the point, not an index that int32 holds.
INDEX_INT64 = "triton.language.int64"
# Where a value becomes (part of) an address; triton-ascend folds structured address arithmetic into
# a scalar offset and strides, so int64 index math that only ends here is never a vector op.
ADDRESS_MAKERS = {TL + n for n in ("make_block_ptr", "advance", "make_tensor_descriptor")}
ATOMICS = {TL + "atomic_" + n for n in ("add", "max", "min", "and", "or", "xor", "xchg", "cas")}
# Calls that pass their operand's value on (the int64 block flows through them).
PASS_THROUGH = {
    TL + n
    for n in (
        "multiple_of",
        "max_contiguous",
        "broadcast_to",
        "reshape",
        "view",
        "expand_dims",
        "cast",
        "trans",
        "permute",
        "where",
    )
}
COMPARE_CALLS = {TL + n for n in ("minimum", "maximum", "clamp")}  # an int64 compare and select each
REDUCTIONS = {
    TL + n
    for n in (
        "sum",
        "max",
        "min",
        "reduce",
        "argmax",
        "argmin",
        "xor_sum",
        "cumsum",
        "cumprod",
        "associative_scan",
        "sort",
        "histogram",
    )
}


def int64_dtype(kernel: Kernel, call: ast.Call) -> bool:
    """`x.to(tl.int64)`, `tl.cast(x, tl.int64)`, `tl.zeros/full(..., dtype=tl.int64)`; not uint64."""
    name = kernel.qualname(call.func) or ""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cast") and not name.startswith("triton."):
        dtype = call.args[0] if call.args else keyword(call, "dtype")
    elif name == TL + "cast":
        dtype = keyword(call, "dtype", 1)
    elif name in (TL + "zeros", TL + "full"):
        dtype = keyword(call, "dtype", 1 if name.endswith("zeros") else 2)
        shape = call.args[0] if call.args else keyword(call, "shape")
        if isinstance(shape, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and e.value == 1 for e in shape.elts
        ):
            return False  # a 0-d or one-element value: no vector work
    else:
        return False
    return dtype is not None and kernel.qualname(dtype) == INDEX_INT64


def vector_use(kernel: Kernel, start: ast.AST, helpers: dict | None = None) -> ast.AST | None:
    """Where the int64 value of `start` (or a block computed from it) is used as a vector outside
    address computation: stored, reduced, compared for a `tl.where`, passed on after block
    arithmetic. None when every use ends in a load/store address or mask, or stays scalar."""
    uses = _name_uses(kernel)
    seen: set[tuple[str, bool]] = set()
    todo: list[tuple[ast.AST, bool]] = [(start, False)]
    while todo:
        node, arith = todo.pop()
        while True:
            parent = kernel.parent.get(node)
            if parent is None:
                break
            if isinstance(parent, (ast.keyword, ast.Call)):
                call = kernel.parent[parent] if isinstance(parent, ast.keyword) else parent
                verdict = _in_call(
                    kernel, call, node, parent.arg if isinstance(parent, ast.keyword) else None, helpers or {}
                )
                argument, node = node, call
                if verdict == "address":
                    break
                if verdict == "compare":
                    arith = arith or _is_block(kernel, call)
                elif verdict == "reduce":
                    if arith or _is_block(kernel, argument):
                        return call
                    break
                elif verdict == "sink":
                    if arith:
                        return call
                    break
                continue
            elif isinstance(parent, (ast.BinOp, ast.Compare)):
                if isinstance(parent, ast.BinOp) and _leftmost(parent) in _pointers(kernel):
                    break  # base pointer + offsets: an address, wherever it is used (helpers too)
                if isinstance(parent, ast.Compare) and _names_a_mask(kernel, parent):
                    break  # a boolean the loads/stores need as their mask: what else reads it reads a bool
                arith = arith or _is_block(kernel, parent)
                node = parent
                continue
            elif isinstance(parent, (ast.UnaryOp, ast.BoolOp, ast.Tuple, ast.List, ast.Starred)):
                node = parent
                continue
            elif isinstance(parent, ast.Subscript):
                if node is not parent.value:
                    break
                node = parent
                continue
            elif isinstance(parent, ast.Attribute):
                if parent.attr not in ("to", "cast", "T"):
                    break  # x.dtype, x.shape: not the value
                node = parent  # x.to(...): the call decides next (a cast away from int64 stops)
                continue
            elif isinstance(parent, ast.IfExp):
                if node is parent.test:
                    break
                node = parent
                continue
            elif isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                if isinstance(parent, ast.AugAssign):
                    arith = arith or _is_block(kernel, parent.target)
                for target in targets:
                    for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                        grown = arith or (name in _blocks(kernel) and _updated_in_place(kernel, name))
                        if (name, grown) not in seen and (name, True) not in seen:
                            seen.add((name, grown))
                            todo.extend((use, grown) for use in uses.get(name, ()))
                break
            elif isinstance(parent, ast.Return):
                return parent if arith else None
            else:
                break  # if/while tests, for iterators, bare expressions: scalar control, no vector
    return None


def _in_call(kernel: Kernel, call: ast.Call, arg: ast.AST, kw: str | None, helpers: dict) -> str:
    """What a call does with one of its arguments: "address", "pass", "compare", "reduce", "sink"."""
    name = kernel.qualname(call.func) or ""
    position = next((i for i, a in enumerate(call.args) if a is arg), None)
    if (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in ("to", "cast")
        and not name.startswith("triton.")
        or name == TL + "cast"
    ):
        dtype = call.args[-1] if call.args and name != TL + "cast" else keyword(call, "dtype", 1)
        target = kernel.qualname(dtype) if dtype is not None else None
        if target and target.startswith("triton.language.") and target not in INT64:
            return "address"  # converted to int32, uint32, a float or a pointer: no longer int64 (stop)
        return "pass"
    if name == TL + "load":
        return "address" if position in (0, 1) or kw in ("pointer", "mask", "boundary_check") else "sink"
    if name == TL + "store":
        return "address" if position in (0, 2) or kw in ("pointer", "mask", "boundary_check") else "sink"
    if name in ATOMICS:
        return "address" if position == 0 or kw in ("pointer", "mask") else "sink"
    if name in ADDRESS_MAKERS:
        return "address"
    if name == TL + "where":
        return "sink" if position == 0 or kw == "condition" else "pass"
    if name in COMPARE_CALLS:
        return "compare"
    if name in PASS_THROUGH:
        return "pass"
    if name in REDUCTIONS:
        return "reduce"
    helper = helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if helper is not None:
        param = (
            kw
            if kw is not None
            else helper.params[position]
            if position is not None and position < len(helper.params)
            else None
        )
        if param is not None and param in _pointers(helper):
            return "address"  # a pointer block handed to a @triton.jit helper that loads through it
    return "sink"


def _names_a_mask(kernel: Kernel, compare: ast.Compare) -> bool:
    """`key_mask = key_offset < n`, with `key_mask` (or a mask built from it) the mask of a load,
    store or atomic: the compare is a memory mask, which the rule accepts, and the boolean it gives
    carries no int64 on to a `tl.where` or a `&` that reuses it."""
    node: ast.AST = compare
    while isinstance(parent := kernel.parent.get(node), (ast.BoolOp, ast.UnaryOp)) or (
        isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.BitAnd, ast.BitOr))
    ):
        node = parent
    if not isinstance(parent, (ast.Assign, ast.AnnAssign)) or node is not parent.value:
        return False
    targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
    names = {t.id for t in targets if isinstance(t, ast.Name)}
    return bool(names) and bool(names & _mask_sources(kernel))


def _mask_sources(kernel: Kernel) -> frozenset[str]:
    """Every name the mask argument of a load, store or atomic depends on."""
    cached = kernel.__dict__.get("_int64_mask_sources")
    if cached is None:
        names: set[str] = set()
        for call in kernel.calls("load", "store", *(a.rsplit(".", 1)[-1] for a in ATOMICS)):
            name = kernel.qualname(call.func) or ""
            position = 1 if name == TL + "load" else None if name == TL + "atomic_cas" else 2
            mask = keyword(call, "mask", position)
            if mask is not None:
                names |= kernel.sources(mask)
        cached = kernel.__dict__["_int64_mask_sources"] = frozenset(names)
    return cached


def _name_uses(kernel: Kernel) -> dict[str, list[ast.Name]]:
    cache = kernel.__dict__.get("_int64_name_uses")
    if cache is None:
        cache = {}
        for node in ast.walk(kernel.node):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                cache.setdefault(node.id, []).append(node)
        kernel.__dict__["_int64_name_uses"] = cache
    return cache


def _tiny(shape: ast.AST | None) -> bool:
    """`()`, `[]`, `[1]`: a 0-d or one-element value."""
    return isinstance(shape, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and e.value == 1 for e in shape.elts
    )


def _block_expr(kernel: Kernel, expr: ast.AST, blocks) -> bool:
    """Kernel.is_block, except that `tl.full((), ...)` / `tl.zeros([1], ...)` make scalars."""
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and node.id in blocks:
            return True
        if isinstance(node, ast.Call):
            name = kernel.qualname(node.func)
            if name in (TL + "zeros", TL + "full") and _tiny(node.args[0] if node.args else keyword(node, "shape")):
                continue
            if name in BLOCK_MAKERS:
                return True
            if name in KERNEL_REDUCTIONS:
                continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def _blocks(kernel: Kernel) -> frozenset[str]:
    return kernel.names_where(_block_expr)


def _is_block(kernel: Kernel, expr: ast.AST) -> bool:
    return _block_expr(kernel, expr, _blocks(kernel))


def _leftmost(expr: ast.AST) -> str | None:
    """`x_ptr + a * s + b` -> "x_ptr": the base of a pointer expression."""
    while isinstance(expr, ast.BinOp):
        expr = expr.left
    return expr.id if isinstance(expr, ast.Name) else None


def _pointers(kernel: Kernel) -> frozenset[str]:
    """Names holding pointers: the bases of load/store/atomic/block-pointer addresses, and names
    assigned from a pointer plus offsets."""
    cached = kernel.__dict__.get("_int64_pointers")
    if cached is not None:
        return cached
    names: set[str] = set()
    for call in kernel.calls("load", "store", "make_block_ptr", *(a.rsplit(".", 1)[-1] for a in ATOMICS)):
        ptr = call.args[0] if call.args else keyword(call, "pointer") or keyword(call, "base")
        base = _leftmost(ptr) if ptr is not None else None
        if base is not None:
            names.add(base)
    changed = True
    while changed:
        changed = False
        for name, values in kernel.assigns.items():
            bases = {_leftmost(v) for v in values} - {None, name}
            if name not in names and bases & names:
                names.add(name)  # p2 = p + offs: a pointer too
                changed = True
            elif name in names and not bases <= names:
                names |= bases  # ptrs = X + offs, tl.load(ptrs): X is the pointer
                changed = True
    out = frozenset(names)
    kernel.__dict__["_int64_pointers"] = out
    return out


def _updated_in_place(kernel: Kernel, name: str) -> bool:
    """`acc += x` on a block: int64 vector arithmetic on the accumulator itself."""
    return any(
        isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
        for n in ast.walk(kernel.node)
    )


class Int64IndexArithmetic(Rule):
    """## What it finds
    Values cast to or created as int64 in a kernel (`.to(tl.int64)`, `tl.cast(x, tl.int64)`,
    `tl.zeros/full(..., dtype=tl.int64)`) that reach vector arithmetic other than an address: int64
    blocks that are stored, reduced, accumulated, or compared for a `tl.where`.

    ## Why it is slow
    On Atlas A2/A3 the vector unit has no int64 add and no int64 (or int32) compare: int64 block
    arithmetic falls back to the scalar unit, one element at a time (the layernorm profile in
    triton-ascend's profiling guide shows scalar time near 60% against under 10% vector). The GPU habit of
    promoting `program_id` to int64 against overflow makes every offset computed from it int64.

    ## Example
    ```python
    row = tl.program_id(0).to(tl.int64)
    offs = row * stride + tl.arange(0, BLOCK)
    x = tl.where(offs < limit, tl.load(x_ptr + offs), 0.0)   # int64 vector compare
    count = tl.sum((x != 0).to(tl.int64))                    # int64 vector adds
    ```

    ## Use instead
    ```python
    cols = tl.arange(0, BLOCK)                   # compare the int32 column, offset the pointer
    x = tl.where(cols < limit - row * stride, tl.load(x_ptr + row * stride + cols), 0.0)
    count = tl.sum((x != 0).to(tl.int32))        # int32 while a block's count fits
    ```
    Keep int64 only where values can overflow int32 (addresses of huge tensors, prefix sums); int64
    offsets that only form load/store addresses and masks cost nothing on the vector unit.

    ## Known false positives
    Measured on 25 labelled findings of Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (2 true, 19 false, 4 debatable before this section). Now accepted:
    - a scalar `tl.program_id(0).to(tl.int64)` (or `(pid * BLOCK).to(tl.int64)`, an int64 loaded
      index) whose values only become load/store addresses and masks: triton-ascend folds structured
      address arithmetic into a scalar offset and strides, and scalar int64 runs on the scalar unit;
    - int64 offset blocks (`tl.arange(0, BLOCK_M).to(tl.int64)`) used only in pointers and masks;
    - 0-d and one-element int64 values (`tl.full([], 0, dtype=tl.int64)`, `tl.zeros([1], ...)`);
    - an int64 block only selected and stored (argmax's index block kept for the int64 output);
    - int64 offsets folded into pointer blocks handed to a `@triton.jit` helper that loads through
      them (flash attention's `K_block_ptr = K + kv_offset + ...`), and int64 values narrowed with
      `.to(tl.uint32)`/`.to(tl.int32)` before any block arithmetic (philox counters).
    After the held-out labels (2026-12, 8 findings: 5 true, 3 false), also accepted: an int64 offset
    compared into a named mask that a load, store or atomic uses (`key_mask = key_offset < n`), then
    reused as a boolean (`hit = (digit == b) & key_mask`, `tl.where(hit, rank - 1, 0)`): the compare
    is the memory mask the rule accepts, and what reads the boolean does no int64 work. A compare
    written straight into a `tl.where`, or named but needed by no load or store, is still flagged.
    After a second held-out set (2026-12, 13 findings: 8 true, 2 false, 3 debatable), also accepted: values made
    unsigned 64-bit (`row.to(tl.uint64) * n_cols + col`, a dropout philox subsequence): uint64 is a
    bit pattern (RNG counter, packed key, hash) whose 64 bits are the point, not index math that int32
    holds; and an int64 block combined with values loaded from a parameter for which every launch in
    the file passes an int64 tensor, as the launching function's `if x.dtype == torch.int64:` (also
    through `dtype = x.dtype`, or an `assert`) says: the running min / max of int64 data must be int64.
    The same accumulator launched for narrower integers (an `else:` branch) is still flagged.
    Still misread: the accepted mask may be one that triton-ascend folds into the DMA bounds for the
    load, so reusing it in a `tl.where` can materialize the int64 compare after all; other
    `@triton.jit` helpers are opaque: an int64 block passed to one counts as used there only after
    block arithmetic; int64 data (an int64 tensor's max) reads as index math;
    int64 index math feeding a gather address is treated as an address although a gather
    materializes its offsets.

    ## Targets
    ascend.

    ## References
    triton-ascend `docs/en/migration_guide/performance_guidelines.md` (vector ops by dtype) and
    `docs/en/debug_guide/profiling.md` (layernorm example). At launch Triton makes an int argument
    outside the int32 range a 64-bit one.
    """

    code = "ASC007"
    name = "int64-index-arithmetic"
    message = (
        "int64 values from `{expr}` reach vector arithmetic (`{use}`): vector int64 add and compare fall back to scalar"
    )
    fix_title = "Keep index arithmetic in int32 where values fit"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            calls = sorted(
                (n for n in ast.walk(kernel.node) if isinstance(n, ast.Call)), key=lambda c: (c.lineno, c.col_offset)
            )
            for call in calls:
                if not int64_dtype(kernel, call):
                    continue
                use = vector_use(kernel, call, ctx.kernels)
                if use is not None and not int64_data(ctx, kernel, use):
                    yield self.hit(call, expr=_short(call), use=_short(use))


def int64_data(ctx, kernel: Kernel, use: ast.AST) -> bool:
    """The vector use combines the int64 block with values loaded from pointer parameters for which
    every launch in the file passes an int64 tensor, as the launching function's own branch on the
    argument's dtype says (`elif inp.dtype == torch.int64: min_kernel_int64[grid](inp, ...)`, also
    through `dtype = inp.dtype`) or its assert does: a running min / max / sum of int64 data, which
    must be int64. False when nothing in the use is loaded from a parameter or a launch says nothing."""
    params = _loaded_params(kernel, use)
    launches = ctx.launches_of(kernel)
    if not params or not launches:
        return False
    for launch in launches:
        args = launch.arg_nodes(kernel.params)
        for param in params:
            arg = args.get(param)
            while (
                isinstance(arg, ast.Call)
                and isinstance(arg.func, ast.Attribute)
                and arg.func.attr in ("contiguous", "view", "reshape", "flatten")
            ):
                arg = arg.func.value
            dtypes = _guarded_dtypes(ctx, launch, arg.id) if isinstance(arg, ast.Name) else None
            if not dtypes or not dtypes <= {"int64", "uint64"}:
                return False
    return True


def _loaded_params(kernel: Kernel, use: ast.AST) -> set[str]:
    """Pointer parameters whose loads the use reads, directly or through a name assigned a load."""
    values = [use] + [v for n in ast.walk(use) if isinstance(n, ast.Name) for v in kernel.assigns.get(n.id, ())]
    out: set[str] = set()
    for value in values:
        for call in (c for c in ast.walk(value) if isinstance(c, ast.Call)):
            if kernel.qualname(call.func) == TL + "load" and (ptr := pointer_of(call)) is not None:
                base = _leftmost(ptr)
                if base in kernel.params:
                    out.add(base)
    return out


def _guarded_dtypes(ctx, launch, name: str) -> set[str] | None:
    """The dtypes an `if` around the launch (the launch in its body) or an `assert` before it allows
    for `name`: `name.dtype == torch.int64`, `name.dtype in (...)`, or the same on `d` after
    `d = name.dtype`."""
    fn = launch.function
    if fn is None:
        return None
    aliases = {
        t.id
        for a in ast.walk(fn)
        if isinstance(a, ast.Assign)
        and isinstance(a.value, ast.Attribute)
        and a.value.attr == "dtype"
        and isinstance(a.value.value, ast.Name)
        and a.value.value.id == name
        for t in a.targets
        if isinstance(t, ast.Name)
    }
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.If)
            and any(launch.node in ast.walk(s) for s in node.body)
            or (isinstance(node, ast.Assert) and node.lineno < launch.node.lineno)
        ):
            found = _dtype_test(ctx, node.test, name, aliases)
            if found:
                return found
    return None


def _dtype_test(ctx, test: ast.AST, name: str, aliases: set[str]) -> set[str] | None:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((f for f in (_dtype_test(ctx, v, name, aliases) for v in test.values) if f), None)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left = test.left
    if not (
        isinstance(left, ast.Attribute)
        and left.attr == "dtype"
        and isinstance(left.value, ast.Name)
        and left.value.id == name
        or isinstance(left, ast.Name)
        and left.id in aliases
    ):
        return None
    right = test.comparators[0]
    if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        options = right.elts
    elif isinstance(test.ops[0], ast.Eq):
        options = [right]
    else:
        return None
    names = [ctx.qualname(o) or "" for o in options]
    if not names or not all(n.startswith("torch.") for n in names):
        return None
    return {n.rsplit(".", 1)[-1] for n in names}


def _short(node: ast.AST, limit: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
