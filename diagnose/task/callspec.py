"""Reading a call spec back from its text (`diagnose/task/specs.py` documents the grammar).

The text is parsed as a Python expression and its tree is read, never evaluated: a spec from a capture
file or the command line cannot run code. Every mistake is a one-line `UsageError` that quotes the
part it could not read.
"""

from __future__ import annotations

import ast
import math
import re

from diagnose import syntax
from diagnose.errors import UsageError
from diagnose.task.specs import CallSpec, DtypeValue, Opaque, Same, TensorSpec, Value, short_dtype

NAMED_CONSTANTS = {"inf": math.inf, "nan": math.nan, "True": True, "False": False, "None": None}
TENSOR_OPTIONS = ("stride", "offset", "storage", "base", "range", "values")
# `<JITFunction>`, `<TensorDescriptor>`: a captured value no spec can write (read back, never replayed).
OPAQUE = re.compile(r"<([A-Za-z_][\w.\[\], ]*)>")
OPAQUE_CALL = "__diagnose_opaque__"


def parse_call(text: str) -> CallSpec:
    """`CallSpec` of `fn(a=f16[8], b=2)` or `kernel[(4,)](...)`; `UsageError` when it does not read."""
    try:
        tree = syntax.parse(OPAQUE.sub(lambda m: f"{OPAQUE_CALL}({m.group(1)!r})", text.strip()), mode="eval")
    except SyntaxError as exc:
        raise UsageError(f"call spec {text!r} does not parse: {exc.msg} at column {exc.offset or 0}") from None
    call = tree.body
    if not isinstance(call, ast.Call):
        raise UsageError(f"call spec {text!r}: expected `function(arg=..., ...)`")
    func, grid = call.func, None
    if isinstance(func, ast.Subscript):  # kernel[grid](...)
        grid = _grid(func.slice, text)
        func = func.value
    target = _dotted(func)
    if target is None:
        raise UsageError(f"call spec {text!r}: the callee must be a name such as `rms_norm` or `Cls.apply`")
    args = tuple(_value(a, text) for a in call.args)
    kwargs = []
    for keyword in call.keywords:
        if keyword.arg is None:
            raise UsageError(f"call spec {text!r}: `**` arguments are not allowed; name each one")
        kwargs.append((keyword.arg, _value(keyword.value, text)))
    return CallSpec(target, args, tuple(kwargs), grid)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _grid(node: ast.AST, text: str) -> tuple[int, ...]:
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    grid = tuple(_int(i, text, "grid") for i in items)
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        raise UsageError(f"call spec {text!r}: a grid has 1 to 3 non-negative sizes")
    return grid


def _int(node: ast.AST, text: str, what: str) -> int:
    value = _constant(node, text)
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"call spec {text!r}: {what} must be an integer, not {ast.unparse(node)!r}")
    return value


def _constant(node: ast.AST, text: str):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant(node.operand, text)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Name) and node.id in NAMED_CONSTANTS:
        return NAMED_CONSTANTS[node.id]
    raise UsageError(f"call spec {text!r}: cannot read {ast.unparse(node)!r} as a value")


def _value(node: ast.AST, text: str) -> Value:
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(e, text) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Subscript) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
        return _tensor(node, text)
    if isinstance(node, ast.Call) and _dotted(node.func) == OPAQUE_CALL:
        return Opaque(node.args[0].value)
    if isinstance(node, ast.Call) and _dotted(node.func) == "same":
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Name) or node.keywords:
            raise UsageError(f"call spec {text!r}: write `same(name)` with the other argument's name")
        return Same(node.args[0].id)
    if isinstance(node, ast.Attribute):
        name = _dotted(node)
        if name and name.split(".")[0] in ("torch", "tl", "triton") and short_dtype(name):
            return DtypeValue(("tl." if not name.startswith("torch.") else "torch.") + name.rsplit(".", 1)[1])
        raise UsageError(f"call spec {text!r}: unknown name {name!r} (dtypes are written torch.float16 or tl.float32)")
    return _constant(node, text)


def _tensor(node: ast.AST, text: str) -> TensorSpec:
    options: dict = {}
    if isinstance(node, ast.Call):
        if node.args:
            raise UsageError(f"call spec {text!r}: tensor options are named: {ast.unparse(node)!r}")
        for keyword in node.keywords:
            if keyword.arg not in TENSOR_OPTIONS:
                raise UsageError(
                    f"call spec {text!r}: unknown tensor option {keyword.arg!r}; options: {', '.join(TENSOR_OPTIONS)}"
                )
            options[keyword.arg] = keyword.value
        node = node.func
    assert isinstance(node, ast.Subscript)
    name = _dotted(node.value) or ""
    dtype = short_dtype(name)
    if dtype is None:
        raise UsageError(f"call spec {text!r}: unknown dtype {name!r} (f16, bf16, f32, i64, ...)")
    dims = node.slice
    items = dims.elts if isinstance(dims, ast.Tuple) else [dims]
    shape = tuple(_int(i, text, "a dimension") for i in items)
    if any(d < 0 for d in shape):
        raise UsageError(f"call spec {text!r}: negative dimension in {ast.unparse(node)!r}")
    spec: dict = {"dtype": dtype, "shape": shape}
    if "stride" in options:
        stride = _value(options["stride"], text)
        stride = stride if isinstance(stride, tuple) else (stride,)
        if len(stride) != len(shape) or not all(isinstance(s, int) and not isinstance(s, bool) for s in stride):
            raise UsageError(f"call spec {text!r}: stride needs one integer per dimension of {shape}")
        spec["stride"] = stride
    for key in ("offset", "storage"):
        if key in options:
            spec[key] = _int(options[key], text, key)
    if "base" in options:
        if not isinstance(options["base"], ast.Name):
            raise UsageError(f"call spec {text!r}: base names another argument: base=x")
        spec["base"] = options["base"].id
    if "range" in options:
        bounds = _value(options["range"], text)
        if not (isinstance(bounds, tuple) and len(bounds) == 2 and all(isinstance(b, (int, float)) for b in bounds)):
            raise UsageError(f"call spec {text!r}: range is (low, high)")
        if not bounds[0] < bounds[1] and not (bounds[0] == bounds[1] and dtype not in ("i8", "i16", "i32", "i64")):
            raise UsageError(f"call spec {text!r}: range ({bounds[0]}, {bounds[1]}) is empty")
        spec["low"], spec["high"] = bounds
    if "values" in options:
        values = _value(options["values"], text)
        spec["values"] = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    return TensorSpec(**spec)
