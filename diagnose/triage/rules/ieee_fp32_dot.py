from __future__ import annotations

import ast

from diagnose.triage.hosteval import UNKNOWN, TensorSpec
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword, pointer_of


class IeeeFp32Dot(Rule):
    """## What it finds
    `tl.dot(..., input_precision="ieee")` (or the older `allow_tf32=False`). The setting only
    matters for fp32 operands: a dot whose operand is explicitly 16-bit, 8-bit or fp64 in the kernel
    (`p.to(tl.float16)` above the dot, a typed `tl.zeros`, through `tl.trans`) is not flagged, nor one
    whose operand is loaded from (or cast to the element type of, `p.to(v_ptr.dtype.element_ty)`) a
    pointer parameter for which the same file only ever passes 16-bit tensors: every launch of the
    kernel, as the file's own callers make it (test functions, a `__main__` block, `result = test()`,
    `ModelNew.forward` on `get_inputs()`), gets an fp16/bf16 tensor there, or the launching function
    asserts it (`assert v.dtype in (torch.float16, torch.bfloat16)`).

    ## Why it is slow
    NVIDIA tensor cores take fp32 operands only as tf32. With `ieee` precision Triton lowers the dot
    to FMA instructions on every NVIDIA target (sm_80 and sm_90: 128 to 8192 `fma.rn.f32`, no
    `mma`/`wgmma`): an order of magnitude below tensor-core throughput.

    ## Example
    ```python
    acc = tl.dot(a, b, acc, input_precision="ieee")
    ```

    ## Use instead
    ```python
    acc = tl.dot(a, b, acc)                            # tf32 on fp32 inputs
    acc = tl.dot(a, b, acc, input_precision="tf32x3")  # near-fp32 accuracy on tensor cores
    ```
    or cast the operands to bf16/fp16 where the accuracy budget allows.

    ## Known false positives
    Operand types usually follow the caller's tensors (`tl.load` of a pointer argument, `x.to(y.dtype)`).
    A finding is `high` confidence where an operand is known fp32 (cast in the kernel, or an fp32 tensor
    from the file's own callers) and `low` where nothing says (a dtype-generic kernel whose callers are
    not in the file, as flash-linear-attention's chunk kernels: of 194 findings in its `fla/`, 155 `low`; the
    39 `high` are dots on operands it casts to fp32). TritonBench-G and FlagGems: 121 `low`, 11 `high`.
    Triage reads them off the callers in the same file only, so a dtype-generic kernel is flagged as
    if it ran on fp32 unless every launch the file makes passes 16-bit tensors (an fp32 tensor, an
    unknown dtype, a dtype loop, a caller that is a method or a launcher nothing in the file calls
    keeps the finding). That is right for fp32 callers (TritonBench's linear-attention kernels, tested
    on fp32). A file that launches no kernel at all (kernels another file launches, as FlagGems'
    flash attention is launched from `flash_api.py`, which asserts fp16/bf16) says nothing of the
    dtypes: only a dot whose operand the kernel itself casts to fp32 is flagged there, so an fp32
    kernel launched from another file is missed. Debatable rather than false: op libraries (FlagGems
    mm/bmm/addmm/conv) that keep `allow_tf32=False` on purpose to match torch's fp32 matmul numerics,
    triangular-mask dots that compute a cumsum on explicit fp32 (tf32 would round the summands; only
    tf32x3 fits), and vendor backend copies (Ascend, Cambricon, MUSA) triaged for cuda. Measured on
    25 labelled findings on Liger-Kernel, FlagGems, TritonBench and the Triton tutorials: 11 true, 3
    false, 11 debatable (79%) before reading the callers; 11 true, 2 false (the flash attention pair),
    11 debatable (85%) after; 11 true, 0 false, 11 debatable (100%) once a file launching nothing is
    left alone (FlagGems 43 -> 41 findings for cuda:sm90, no true one lost); held-out 8 labelled: 4
    true, 0 false, 4 debatable, unchanged.

    ## Targets
    cuda (gfx942 has fp32 MFMA, so AMD is not affected).

    ## References
    `tl.dot` documentation (`input_precision`).
    """

    code = "TRI004"
    name = "ieee-fp32-dot"
    message = "`tl.dot` with {setting} runs on FMA units, not tensor cores, when its operands are fp32"
    fix_title = 'Use the default tf32 or input_precision="tf32x3", or cast operands to bf16'
    targets = ("cuda",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            assigns = None
            for call in kernel.calls("dot"):
                operands = [
                    op
                    for op in (
                        call.args[i] if len(call.args) > i else keyword(call, name)
                        for i, name in enumerate(("input", "other"))
                    )
                    if op is not None
                ]
                cast = [operand_dtype(kernel, op) for op in operands]  # what the kernel itself makes them
                if any(dtype in NOT_FP32 for dtype in cast):
                    continue  # 16-bit, 8-bit or fp64 operands: there is no tf32 to turn off
                if not any(_has_setting(kw) for kw in call.keywords):
                    continue
                if not ctx.launches and "float32" not in cast:
                    continue  # a file of kernels launched elsewhere: their operands' dtype is not known here
                assigns = assigns if assigns is not None else _plain_assigns(kernel)
                hosts = [host_dtypes(ctx, kernel, op, assigns) for op in operands]
                if any(_not_fp32(found) for found in hosts):
                    continue  # every launch the file makes passes 16-bit tensors for this operand
                # known fp32 (cast in the kernel, or passed by the file's callers): high; a dtype-generic
                # kernel whose callers' tensors are not known here may well run on 16-bit ones: low
                fp32 = "float32" in cast or any(found and found & FP32 for found in hosts)
                confidence = "high" if fp32 else "low"
                for kw in call.keywords:
                    v = kw.value
                    if not isinstance(v, ast.Constant):
                        continue
                    if kw.arg == "input_precision" and v.value == "ieee":
                        yield self.hit(v, setting='input_precision="ieee"', confidence=confidence)
                    elif kw.arg == "allow_tf32" and v.value is False:
                        yield self.hit(v, setting="allow_tf32=False", confidence=confidence)


def _has_setting(kw: ast.keyword) -> bool:
    v = kw.value
    return isinstance(v, ast.Constant) and (
        kw.arg == "input_precision" and v.value == "ieee" or kw.arg == "allow_tf32" and v.value is False
    )


NOT_FP32 = {
    "float16",
    "bfloat16",
    "float64",
    "int8",
    "uint8",
    "float8e4nv",
    "float8e5",
    "float8e4b15",
    "float8e4b8",
    "float8e5b16",
}
SHAPE_ONLY = {"trans", "permute", "reshape", "view", "broadcast_to", "expand_dims"}


def operand_dtype(kernel, expr: ast.AST, depth: int = 4) -> str | None:
    """The element type (`"float16"`, `"float32"`, ...) an expression is known to have from explicit
    casts and typed constructors in the kernel, or None. `x.to(y.dtype)` is unknown: it follows the
    caller's tensors."""
    if depth == 0:
        return None
    if isinstance(expr, ast.Call):
        name = kernel.qualname(expr.func) or ""
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "to" and not name.startswith("triton."):
            return _dtype_name(kernel, expr.args[0] if expr.args else keyword(expr, "dtype"))
        if name == "triton.language.cast":
            return _dtype_name(kernel, expr.args[1] if len(expr.args) > 1 else keyword(expr, "dtype"))
        if name in ("triton.language.zeros", "triton.language.full"):
            return _dtype_name(kernel, keyword(expr, "dtype", 2 if name.endswith("full") else 1))
        short = (
            name.rsplit(".", 1)[-1]
            if name.startswith("triton.language.")
            else expr.func.attr
            if isinstance(expr.func, ast.Attribute)
            else None
        )
        if short in SHAPE_ONLY and (expr.args or isinstance(expr.func, ast.Attribute)):
            inner = expr.args[0] if name.startswith("triton.language.") else expr.func.value
            return operand_dtype(kernel, inner, depth - 1)
        return None
    if isinstance(expr, ast.Attribute) and expr.attr == "T":
        return operand_dtype(kernel, expr.value, depth - 1)
    if isinstance(expr, ast.Name):
        values = kernel.assigns.get(expr.id, ())
        # the latest assignment above the use (`p = p.to(tl.float16)` right before the dot), else all
        above = [v for v in values if v.lineno < expr.lineno]
        if above:
            values = [max(above, key=lambda v: (v.lineno, v.col_offset))]
        found = {operand_dtype(kernel, v, depth - 1) for v in values}
        return found.pop() if len(found) == 1 else None
    return None


def _dtype_name(kernel, node: ast.AST | None) -> str | None:
    name = kernel.qualname(node) if node is not None else None
    if name and name.startswith("triton.language."):
        return name.rsplit(".", 1)[-1]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}.get(node.value, node.value)
    return None


# Host (torch) and Triton dtype names of fp32.
FP32 = {"float32", "float", "fp32"}
# Host (torch) dtype names that are not fp32; "float" and "float32" are, anything else is unknown.
HOST_NOT_FP32 = {"float16", "half", "bfloat16", "float64", "double", "int8", "uint8", "float8_e4m3fn", "float8_e5m2"}


def _not_fp32(dtypes: set[str] | None) -> bool:
    return bool(dtypes) and all(d in HOST_NOT_FP32 or d in NOT_FP32 for d in dtypes)


def host_dtypes(ctx, kernel, expr: ast.AST, assigns=None) -> set[str] | None:
    """The element types an operand can have at run time, from the file's own host code: the operand is
    traced back through assignments, shape ops and `x.to(y.dtype)` to explicit casts (`"tl:<dtype>"`)
    and to loads of pointer parameters, and each parameter's tensor is read off every launch of the
    kernel as the file's callers make it (`Context.caller_records`) or from a host assert on the
    argument (`assert q.dtype in (torch.float16, torch.bfloat16)`). None when anything is unknown."""
    assigns = assigns if assigns is not None else _plain_assigns(kernel)
    sources = _value_sources(kernel, expr, assigns, set())
    if not sources:
        return None
    out = {s[3:] for s in sources if s.startswith("tl:")}
    params = {s for s in sources if not s.startswith("tl:")}
    if not params:
        return out
    launches = ctx.launches_of(kernel)
    if not launches:
        return None
    for launch in launches:
        asserted = _asserted_dtypes(ctx, launch, kernel, params)
        rest = params - set(asserted)
        for found in asserted.values():
            out |= found
        if not rest:
            continue
        records = ctx.caller_records(launch)
        if not records:
            return None
        for record in records:
            named = dict(zip(kernel.params, record.args))
            named.update(record.kwargs)
            values = [named.get(p, UNKNOWN) for p in rest]
            if any(v is UNKNOWN for v in values):
                return None
            tensors = [v for v in values if isinstance(v, TensorSpec)]
            if not tensors:
                return None  # what was loaded is not a tensor argument
            out |= {t.dtype for t in tensors}
    return out


def _plain_assigns(kernel) -> dict[str, list[tuple[ast.stmt, ast.expr]]]:
    """name -> (statement, value) of its plain assignments, in source order (`+=` updates move a
    pointer or accumulate, they do not retype a loaded value)."""
    out: dict[str, list[tuple[ast.stmt, ast.expr]]] = {}
    for node in ast.walk(kernel.node):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append((node, node.value))
                elif (
                    isinstance(target, ast.Tuple)
                    and isinstance(node.value, ast.Tuple)
                    and len(target.elts) == len(node.value.elts)
                ):
                    for t, v in zip(target.elts, node.value.elts):
                        if isinstance(t, ast.Name):
                            out.setdefault(t.id, []).append((node, v))
    for found in out.values():
        found.sort(key=lambda d: (d[0].lineno, d[0].col_offset))
    return out


def _reaching(kernel, defs: list[tuple[ast.stmt, ast.expr]], use: ast.AST) -> list[ast.expr]:
    """The values of a name that can reach `use`: the last assignment above it when that one is on
    every path to the use (in the same block or an enclosing one), plus later assignments in a loop
    around the use (the next iteration's value); every assignment otherwise."""
    chain = set(kernel.ancestors(use)) | {use}
    above = [d for d in defs if (d[0].lineno, d[0].col_offset) < (use.lineno, use.col_offset) and d[0] not in chain]
    if not above:
        return [v for _, v in defs]
    stmt, value = above[-1]
    holder = kernel.parent.get(stmt)
    if not any(
        isinstance(block, list) and stmt in block and any(x in chain for x in block)
        for block in (getattr(holder, f, None) for f in ("body", "orelse", "finalbody"))
    ):
        return [v for _, v in defs]
    loops = [a for a in chain if isinstance(a, (ast.For, ast.While))]
    carried = [v for s, v in defs if s.lineno > use.lineno and any(loop in set(kernel.ancestors(s)) for loop in loops)]
    return [value, *carried]


def _value_sources(kernel, expr, assigns, seen: set) -> set[str] | None:
    """Where a value's element type comes from: pointer parameters it is loaded from and `tl:<dtype>`
    casts; None for anything else (arithmetic promotes, calls are opaque)."""
    if isinstance(expr, ast.Name):
        if id(expr) in seen:
            return set()
        defs = assigns.get(expr.id)
        if not defs:
            return None
        seen = seen | {id(expr)}
        out: set[str] = set()
        for value in _reaching(kernel, defs, expr):
            found = _value_sources(kernel, value, assigns, seen)
            if found is None:
                return None
            out |= found
        return out
    if isinstance(expr, ast.Subscript):
        return _value_sources(kernel, expr.value, assigns, seen)
    if isinstance(expr, ast.Attribute) and expr.attr == "T":
        return _value_sources(kernel, expr.value, assigns, seen)
    if not isinstance(expr, ast.Call):
        return None
    name = kernel.qualname(expr.func) or ""
    if name == "triton.language.load":
        ptr = pointer_of(expr)
        return _pointer_params(kernel, ptr, assigns, set()) if ptr is not None else None
    if isinstance(expr.func, ast.Attribute) and expr.func.attr == "to" and not name.startswith("triton."):
        target = expr.args[0] if expr.args else keyword(expr, "dtype")
        return _cast_sources(kernel, target, assigns, seen)
    if name == "triton.language.cast":
        return _cast_sources(kernel, expr.args[1] if len(expr.args) > 1 else keyword(expr, "dtype"), assigns, seen)
    if name in ("triton.language.zeros", "triton.language.full"):
        dtype = _dtype_name(kernel, keyword(expr, "dtype", 2 if name.endswith("full") else 1))
        return {"tl:" + dtype} if dtype else None
    short = (
        name.rsplit(".", 1)[-1]
        if name.startswith("triton.language.")
        else expr.func.attr
        if isinstance(expr.func, ast.Attribute)
        else None
    )
    if short in SHAPE_ONLY and (expr.args or isinstance(expr.func, ast.Attribute)):
        inner = expr.args[0] if name.startswith("triton.language.") else expr.func.value
        return _value_sources(kernel, inner, assigns, seen)
    return None


def _cast_sources(kernel, target, assigns, seen) -> set[str] | None:
    if target is None:
        return None
    dtype = _dtype_name(kernel, target)
    if dtype:
        return {"tl:" + dtype}
    # x.to(y.dtype): y's type; x.to(p.dtype.element_ty) / x.to(p.type.element_ty): what p points to
    if isinstance(target, ast.Attribute) and target.attr == "dtype":
        return _value_sources(kernel, target.value, assigns, seen)
    if (
        isinstance(target, ast.Attribute)
        and target.attr == "element_ty"
        and isinstance(target.value, ast.Attribute)
        and target.value.attr in ("dtype", "type")
    ):
        return _pointer_params(kernel, target.value.value, assigns, set())
    return None


def _pointer_params(kernel, expr, assigns, seen: set) -> set[str] | None:
    """The parameters a pointer expression is based on: the names added in `ptr + offsets` that lead to
    a non-constexpr parameter, through assignments, `tl.make_block_ptr(base, ...)` and `tl.advance`.
    Offsets are there too when they are parameters (`x_ptr + start`); the host tells them apart."""
    if isinstance(expr, ast.Name):
        if expr.id in kernel.params and expr.id not in kernel.constexprs:
            return {expr.id}
        if expr.id in seen or expr.id not in assigns:
            return set()
        out: set[str] = set()
        for _, value in assigns[expr.id]:
            found = _pointer_params(kernel, value, assigns, seen | {expr.id})
            if found is None:
                return None
            out |= found
        return out
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        out = set()
        for side in (expr.left, expr.right):
            if isinstance(side, (ast.Name, ast.BinOp, ast.Call, ast.Subscript)):
                found = _pointer_params(kernel, side, assigns, seen)
                if found is None:
                    return None
                out |= found
        return out
    if isinstance(expr, ast.Subscript):
        return _pointer_params(kernel, expr.value, assigns, seen)
    if isinstance(expr, ast.Call):
        name = kernel.qualname(expr.func) or ""
        if name == "triton.language.make_block_ptr":
            base = expr.args[0] if expr.args else keyword(expr, "base")
            return _pointer_params(kernel, base, assigns, seen) if base is not None else None
        if name == "triton.language.advance":
            return _pointer_params(kernel, expr.args[0], assigns, seen) if expr.args else None
        return set()  # tl.arange, tl.program_id, ...: offsets
    return set()


def _asserted_dtypes(ctx, launch, kernel, params: set[str]) -> dict[str, set[str]]:
    """param -> dtypes a host assert in the launching function allows for its argument, e.g.
    `assert q.dtype in (torch.float16, torch.bfloat16)` above `kernel[grid](q, ...)`, with `q` not
    assigned again in between."""
    fn = launch.function
    if fn is None:
        return {}
    every = ctx.indexed("asserts", fn, lambda f: [n for n in ast.walk(f) if isinstance(n, ast.Assert)])
    asserts = [n for n in every if n.lineno < launch.node.lineno]
    if not asserts:
        return {}
    args = launch.arg_nodes(kernel.params)
    out: dict[str, set[str]] = {}
    for param in params:
        arg = args.get(param)
        while (
            isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Attribute)
            and arg.func.attr in ("contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "transpose")
        ):
            arg = arg.func.value
        if not isinstance(arg, ast.Name):
            continue
        for node in asserts:
            found = _assert_allows(ctx, node.test, arg.id)
            if found and not any(
                isinstance(a, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and node.lineno < a.lineno < launch.node.lineno
                and any(
                    isinstance(t, ast.Name) and t.id == arg.id
                    for t in ast.walk(a)
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
                )
                for a in ast.walk(fn)
            ):
                out[param] = found
    return out


def _assert_allows(ctx, test: ast.AST, name: str) -> set[str] | None:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((f for f in (_assert_allows(ctx, v, name) for v in test.values) if f), None)
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Attribute)
        and test.left.attr == "dtype"
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == name
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
