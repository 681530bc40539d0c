"""A tiny evaluator for host code, so rules can know BLOCK sizes, grids and input shapes statically.

It walks `get_inputs()` / `get_input_groups()` and `ModelNew.forward` (and the module functions it
calls) statement by statement with symbolic tensors (`TensorSpec`: shape and dtype, no data) and plain
ints. Anything it does not model is `UNKNOWN`, which spreads; a rule that meets `UNKNOWN` stays quiet.
It never imports or runs user code: every operation is interpreted here, with bounds on integer size,
sequence length and total work, so a hostile file costs milliseconds, not memory.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

from diagnose.triage.imports import qualname


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
MAX_INT = 2**96  # larger results become UNKNOWN (no giant-integer arithmetic on hostile input)
MAX_ITEMS = 64  # longer tuples, lists and dicts become UNKNOWN
BUDGET = 20000  # expression evaluations per entry point

DTYPE_BYTES = {
    "float16": 2,
    "half": 2,
    "bfloat16": 2,
    "float32": 4,
    "float": 4,
    "float64": 8,
    "double": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int": 4,
    "int64": 8,
    "long": 8,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "complex64": 8,
}


@dataclass(frozen=True)
class Dtype:
    name: str

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES.get(self.name, 4)


def dtype_given(kwargs: dict, default: str) -> str:
    """The `dtype=` a tensor maker was called with: its name, `default` where none is given, and
    "unknown" where one is given that cannot be read (`dtype=config.dtype`): not the default."""
    dtype = kwargs.get("dtype")
    if dtype is None:  # not given, or `dtype=None`: torch's default
        return default
    return dtype.name if isinstance(dtype, Dtype) else "unknown"


@dataclass(frozen=True)
class TensorSpec:
    """A tensor as far as triage cares: its shape (ints or UNKNOWN) and dtype."""

    shape: tuple
    dtype: str = "float32"

    def numel(self) -> Any:
        return _prod(self.shape)

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 4)


@dataclass(frozen=True)
class LambdaValue:
    node: ast.Lambda
    env: dict = field(compare=False)


@dataclass(frozen=True)
class LaunchRecord:
    """The values at one launch site in one evaluation (one input group)."""

    node: ast.Call
    group: str | None
    grid: Any
    args: tuple
    kwargs: dict


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


class _OutOfBudget(Exception):
    pass


def _prod(values) -> Any:
    out = 1
    for v in values:
        if not _is_int(v):
            return UNKNOWN
        out *= v
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _bounded(v: Any) -> Any:
    if _is_int(v) and abs(v) > MAX_INT:
        return UNKNOWN
    return v


def _pow(a, b):
    if not _is_int(b) or not 0 <= b <= 128 or (_is_int(a) and abs(a) > 2**32):
        return UNKNOWN
    return a**b


def _shift(a, b):
    return a << b if _is_int(a) and _is_int(b) and 0 <= b <= 96 else UNKNOWN


BINOPS: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Div: operator.truediv,
    ast.Pow: _pow,
    ast.LShift: _shift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
}
COMPARES: dict[type, Callable] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
TENSOR_MAKERS = {"randn", "rand", "empty", "zeros", "ones", "full", "randint", "arange", "normal"}
LIKE_MAKERS = {"randn_like", "rand_like", "empty_like", "zeros_like", "ones_like", "full_like"}


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class Evaluator:
    """Interprets host statements over a small value domain; records every launch it passes."""

    max_depth = 3  # nested function calls followed; deeper calls are UNKNOWN

    def __init__(
        self,
        names: dict[str, str],
        globals_: dict[str, Any],
        functions: dict[str, ast.FunctionDef],
        launch_nodes: set[int],
    ):
        self.names = names
        self.globals = globals_
        self.functions = functions
        self.launch_nodes = launch_nodes
        self.records: list[LaunchRecord] = []
        self.group: str | None = None
        self.steps = 0
        self.depth = 0
        self.cut = False  # a call went unfollowed (too deep) or an evaluation ran out of budget

    # entry points -----------------------------------------------------------------------------

    def call_function(self, fn: ast.FunctionDef, args: list, kwargs: dict | None = None) -> Any:
        """Evaluate `fn` with bound arguments; its launches land in `records`. Returns its value."""
        if self.depth >= self.max_depth:
            self.cut = True
            return UNKNOWN
        self.depth += 1
        try:
            self.run(fn.body, self._bind(fn, args, kwargs or {}))
        except _Return as ret:
            return ret.value
        except _OutOfBudget:
            self.cut = True
            return UNKNOWN
        finally:
            self.depth -= 1
        return None

    def value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        """One expression on a fresh budget; UNKNOWN instead of any evaluation limit."""
        self.steps = 0
        try:
            return self.eval(node, env)
        except (_OutOfBudget, _Return):
            return UNKNOWN

    def run_module(self, body: list[ast.stmt]) -> dict[str, Any]:
        """Module-level constants: simple assignments only, in order."""
        env: dict[str, Any] = {}
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                try:
                    self.run([stmt], env)
                except (_OutOfBudget, _Return):
                    break
        return env

    # statements -------------------------------------------------------------------------------

    def run(self, body: list[ast.stmt], env: dict[str, Any]) -> None:
        for stmt in body:
            self.stmt(stmt, env)

    def stmt(self, s: ast.stmt, env: dict[str, Any]) -> None:
        if isinstance(s, ast.Assign):
            value = self.eval(s.value, env)
            for target in s.targets:
                self.assign(target, value, env)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, self.eval(s.value, env), env)
        elif isinstance(s, ast.AugAssign):
            value = self.eval(s.value, env)
            if isinstance(s.target, ast.Name):
                env[s.target.id] = self.binop(type(s.op), env.get(s.target.id, UNKNOWN), value)
        elif isinstance(s, ast.Expr):
            self.eval(s.value, env)
        elif isinstance(s, ast.Return):
            raise _Return(self.eval(s.value, env) if s.value is not None else None)
        elif isinstance(s, ast.If):
            self.branch(s, env)
        elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            self.loop(s, env)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            self.run(s.body, env)
        elif isinstance(s, ast.Try):
            self.run(s.body, env)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            env[s.name] = UNKNOWN

    def branch(self, s: ast.If, env: dict[str, Any]) -> None:
        test = self.eval(s.test, env)
        if test is not UNKNOWN and not isinstance(test, (TensorSpec, LambdaValue)):
            self.run(s.body if test else s.orelse, env)
            return
        # Unknown test: run both sides, keep only what they agree on.
        sides = []
        for body in (s.body, s.orelse):
            side = dict(env)
            try:
                self.run(body, side)
            except _Return:
                pass
            sides.append(side)
        a, b = sides
        for key in set(a) | set(b):
            va, vb = a.get(key, UNKNOWN), b.get(key, UNKNOWN)
            env[key] = va if _same(va, vb) else UNKNOWN

    def loop(self, s: ast.For | ast.AsyncFor | ast.While, env: dict[str, Any]) -> None:
        # Once, with everything the loop assigns unknown: enough to see the launches inside it.
        assigned = {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for name in assigned:
            env[name] = UNKNOWN
        try:
            self.run(s.body, dict(env))
        except _Return:
            pass

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            ok = isinstance(value, (tuple, list)) and len(value) == len(elts)
            if any(isinstance(e, ast.Starred) for e in elts):
                ok = False
            for i, elt in enumerate(elts):
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, value[i] if ok else UNKNOWN, env)

    # expressions ------------------------------------------------------------------------------

    def eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        self.steps += 1
        if self.steps > BUDGET:
            raise _OutOfBudget
        method = getattr(self, "e_" + type(node).__name__, None)
        return method(node, env) if method else UNKNOWN

    def e_Constant(self, node, env):
        v = node.value
        return v if isinstance(v, (int, float, str, bool)) or v is None else UNKNOWN

    def e_Name(self, node, env):
        if node.id in env:
            return env[node.id]
        return self.globals.get(node.id, UNKNOWN)

    def e_Tuple(self, node, env):
        if len(node.elts) > MAX_ITEMS or any(isinstance(e, ast.Starred) for e in node.elts):
            return UNKNOWN
        return tuple(self.eval(e, env) for e in node.elts)

    def e_List(self, node, env):
        value = self.e_Tuple(node, env)
        return list(value) if isinstance(value, tuple) else UNKNOWN

    def e_Dict(self, node, env):
        if len(node.keys) > MAX_ITEMS or any(k is None for k in node.keys):
            return UNKNOWN
        out = {}
        for k, v in zip(node.keys, node.values):
            key = self.eval(k, env)
            if not isinstance(key, (str, int)):
                return UNKNOWN
            out[key] = self.eval(v, env)
        return out

    def e_BinOp(self, node, env):
        return self.binop(type(node.op), self.eval(node.left, env), self.eval(node.right, env))

    def binop(self, op: type, a: Any, b: Any) -> Any:
        if isinstance(a, tuple) and isinstance(b, tuple) and op is ast.Add:
            return a + b if len(a) + len(b) <= MAX_ITEMS else UNKNOWN
        if not (_num(a) and _num(b)) or op not in BINOPS:
            return UNKNOWN
        if op in (ast.BitAnd, ast.BitOr, ast.RShift) and not (_is_int(a) and _is_int(b)):
            return UNKNOWN
        if op is ast.RShift and b < 0:
            return UNKNOWN
        try:
            return _bounded(BINOPS[op](a, b))
        except (ArithmeticError, ValueError):
            return UNKNOWN

    def e_UnaryOp(self, node, env):
        v = self.eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return UNKNOWN if v is UNKNOWN or not isinstance(v, (bool, int, float)) else not v
        if not _num(v):
            return UNKNOWN
        return -v if isinstance(node.op, ast.USub) else v if isinstance(node.op, ast.UAdd) else UNKNOWN

    def e_BoolOp(self, node, env):
        values = [self.eval(v, env) for v in node.values]
        if any(v is UNKNOWN or not isinstance(v, (bool, int)) for v in values):
            return UNKNOWN
        return all(values) if isinstance(node.op, ast.And) else any(values)

    def e_Compare(self, node, env):
        if len(node.ops) != 1 or type(node.ops[0]) not in COMPARES:
            return UNKNOWN
        a, b = self.eval(node.left, env), self.eval(node.comparators[0], env)
        if not (_num(a) and _num(b)):
            return UNKNOWN
        return COMPARES[type(node.ops[0])](a, b)

    def e_IfExp(self, node, env):
        test = self.eval(node.test, env)
        if isinstance(test, (bool, int)) and test is not UNKNOWN:
            return self.eval(node.body if test else node.orelse, env)
        a, b = self.eval(node.body, env), self.eval(node.orelse, env)
        return a if _same(a, b) else UNKNOWN

    def e_Lambda(self, node, env):
        return LambdaValue(node, dict(env))

    def e_Attribute(self, node, env):
        base = self.eval(node.value, env)
        if isinstance(base, TensorSpec):
            if node.attr == "shape":
                return base.shape
            if node.attr == "dtype":
                return Dtype(base.dtype)
            if node.attr == "ndim":
                return len(base.shape)
            if node.attr in ("T", "mT") and len(base.shape) >= 2:
                return TensorSpec(base.shape[:-2] + base.shape[:-3:-1], base.dtype)
            return UNKNOWN
        if isinstance(base, Dtype) and node.attr == "itemsize":
            return base.itemsize
        name = qualname(node, self.names)
        if name and name.split(".")[0] in ("torch", "triton") and name.rsplit(".", 1)[-1] in DTYPE_BYTES:
            return Dtype(name.rsplit(".", 1)[-1])
        return UNKNOWN

    def e_Subscript(self, node, env):
        base = self.eval(node.value, env)
        index = self.eval(node.slice, env)
        if isinstance(base, (tuple, list)) and _is_int(index) and -len(base) <= index < len(base):
            return base[index]
        if isinstance(base, dict) and isinstance(index, (str, int)):
            return base.get(index, UNKNOWN)
        return UNKNOWN

    def e_Call(self, node, env):
        if id(node) in self.launch_nodes:
            self.record_launch(node, env)
            return UNKNOWN
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self.eval(func.value, env)
            if isinstance(base, TensorSpec):
                return self.tensor_method(base, func.attr, [self.eval(a, env) for a in node.args], node, env)
        args = [self.eval(a, env) for a in node.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.eval(k.value, env) for k in node.keywords if k.arg}
        callee = self.eval(func, env) if isinstance(func, ast.Name) and func.id in env else None
        if isinstance(callee, LambdaValue):
            return self.call_lambda(callee, args)
        name = qualname(func, self.names) or ""
        if isinstance(func, ast.Name) and func.id in self.functions and func.id not in env:
            return self.call_function(self.functions[func.id], args, kwargs)
        return self.builtin(name, args, kwargs)

    def call_lambda(self, fn: LambdaValue, args: list) -> Any:
        env = dict(fn.env)
        params = [a.arg for a in fn.node.args.args]
        for i, p in enumerate(params):
            env[p] = args[i] if i < len(args) else UNKNOWN
        return self.eval(fn.node.body, env)  # within the caller's budget

    def record_launch(self, node: ast.Call, env: dict[str, Any]) -> None:
        grid = self.eval(node.func.slice, env)
        args = tuple(UNKNOWN if isinstance(a, ast.Starred) else self.eval(a, env) for a in node.args)
        kwargs = {k.arg: self.eval(k.value, env) for k in node.keywords if k.arg}
        self.records.append(LaunchRecord(node, self.group, grid, args, kwargs))

    # builtins and tensors ---------------------------------------------------------------------

    def builtin(self, name: str, args: list, kwargs: dict) -> Any:
        short = name.rsplit(".", 1)[-1]
        ints = all(_is_int(a) for a in args)
        if name in ("triton.cdiv", "triton.language.cdiv") and len(args) == 2 and ints and args[1]:
            return -(-args[0] // args[1])
        if name == "triton.next_power_of_2" and len(args) == 1 and ints:
            return _next_power_of_2(args[0]) if args[0] <= MAX_INT else UNKNOWN
        if name in ("min", "max") and args and all(_num(a) for a in args):
            return (min if name == "min" else max)(args)
        if name == "int" and len(args) == 1 and _num(args[0]):
            return int(args[0])
        if name == "abs" and len(args) == 1 and _num(args[0]):
            return abs(args[0])
        if name == "len" and len(args) == 1:
            a = args[0]
            if isinstance(a, (tuple, list, dict)):
                return len(a)
            if isinstance(a, TensorSpec) and a.shape:
                return a.shape[0]
        if name == "math.ceil" and len(args) == 1 and _num(args[0]):
            return math.ceil(args[0])
        if name.startswith("torch.") and short in TENSOR_MAKERS:
            return self.make_tensor(short, args, kwargs)
        if name.startswith("torch.") and short in LIKE_MAKERS and args and isinstance(args[0], TensorSpec):
            return TensorSpec(args[0].shape, dtype_given(kwargs, args[0].dtype))
        return UNKNOWN

    def make_tensor(self, short: str, args: list, kwargs: dict) -> Any:
        dtype = dtype_given(kwargs, "int64" if short in ("randint", "arange") else "float32")
        if "size" in kwargs:
            shape = kwargs["size"]
        elif short == "randint":
            shape = next((a for a in args if isinstance(a, (tuple, list))), UNKNOWN)
        elif short == "arange":
            shape = (args[0],) if len(args) == 1 else UNKNOWN
        elif short == "full":
            shape = args[0] if args else UNKNOWN
        elif len(args) == 1 and isinstance(args[0], (tuple, list)):
            shape = args[0]
        else:
            shape = tuple(args)
        if not isinstance(shape, (tuple, list)):
            return TensorSpec((UNKNOWN,), dtype) if shape is UNKNOWN else UNKNOWN
        return TensorSpec(tuple(shape), dtype)

    def tensor_method(self, t: TensorSpec, attr: str, args: list, node: ast.Call, env) -> Any:
        shape = t.shape
        if attr == "numel":
            return t.numel()
        if attr == "size":
            if not args:
                return shape
            return shape[args[0]] if _is_int(args[0]) and -len(shape) <= args[0] < len(shape) else UNKNOWN
        if attr == "stride" and args and _is_int(args[0]) and -len(shape) <= args[0] < len(shape):
            return _prod(shape[args[0] :][1:]) if args[0] >= 0 else _prod(shape[len(shape) + args[0] :][1:])
        if attr in ("dim", "ndimension"):
            return len(shape)
        if attr == "element_size":
            return t.itemsize
        if attr in ("contiguous", "clone", "cuda", "cpu", "detach", "npu"):
            return t
        if attr in ("float", "half", "bfloat16", "double"):
            return TensorSpec(shape, {"float": "float32", "half": "float16", "double": "float64"}.get(attr, attr))
        if attr == "to":
            dtype = next((a for a in args if isinstance(a, Dtype)), None)
            kw = {k.arg: self.eval(k.value, env) for k in node.keywords if k.arg}
            dtype = dtype or (kw.get("dtype") if isinstance(kw.get("dtype"), Dtype) else None)
            return TensorSpec(shape, dtype.name) if dtype else t
        if attr in ("view", "reshape"):
            dims = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
            return self.reshape(t, list(dims))
        if attr == "flatten" and not args:
            return TensorSpec((t.numel(),), t.dtype)
        if attr == "t" and len(shape) == 2:
            return TensorSpec(shape[::-1], t.dtype)
        if attr in ("new_empty", "new_zeros", "new_ones") and args and isinstance(args[0], (tuple, list)):
            return TensorSpec(tuple(args[0]), t.dtype)
        return UNKNOWN

    def reshape(self, t: TensorSpec, dims: list) -> Any:
        if not dims or len(dims) > MAX_ITEMS:
            return UNKNOWN
        if dims.count(-1) == 1:
            known = _prod([d for d in dims if d != -1])
            total = t.numel()
            if _is_int(known) and _is_int(total) and known:
                dims[dims.index(-1)] = total // known
            else:
                dims[dims.index(-1)] = UNKNOWN
        return TensorSpec(tuple(dims), t.dtype)

    # binding ------------------------------------------------------------------------------------

    def _bind(self, fn: ast.FunctionDef, args: list, kwargs: dict) -> dict[str, Any]:
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        defaults = fn.args.defaults
        env: dict[str, Any] = {}
        for i, p in enumerate(params):
            d = len(params) - len(defaults)
            default = self.eval(defaults[i - d], {}) if i >= d else UNKNOWN
            env[p] = args[i] if i < len(args) else kwargs.get(p, default)
        for a in fn.args.kwonlyargs:
            env[a.arg] = kwargs.get(a.arg, UNKNOWN)
        return env


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or (a is not UNKNOWN and b is not UNKNOWN and type(a) is type(b) and a == b)
    except Exception:  # values are our own small types; a failing __eq__ means "not the same"
        return False
