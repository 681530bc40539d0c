"""The shared context every rule reads: the parsed module, its kernels, their launch sites, module
constants, input shapes, and the launch configurations ("variants") each kernel runs with.

Built once per file. Nothing here imports or executes the user's code: host values come from
`hosteval`, which interprets a small subset of Python over symbolic tensors.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

from diagnose import syntax
from diagnose.jit import decorators_of, is_kernel_wrapper, is_triton_jit, wrapped_by_assignment
from diagnose.records import Location
from diagnose.targets import Target
from diagnose.triage.hosteval import UNKNOWN, Evaluator, LambdaValue, LaunchRecord, TensorSpec, _OutOfBudget, _Return
from diagnose.triage.imports import import_map, qualname
from diagnose.triage.kernel import Config, Kernel

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
MAX_CONFIGS = 256
NEWLINE = re.compile(r"\r\n|\r|\n")


def source_lines(source: str) -> list[str]:
    """Lines as Python numbers them: only \\n, \\r\\n and \\r end a line (str.splitlines also
    splits on form feeds and other separators, which Python treats as whitespace)."""
    return NEWLINE.split(source)


@dataclass
class Launch:
    """A `kernel[grid](...)` call in host code."""

    kernel: str
    node: ast.Call
    function: ast.FunctionDef | None
    cls: str | None
    loop: ast.For | ast.While | None
    records: list[LaunchRecord] = field(default_factory=list)

    @property
    def grid(self) -> ast.expr:
        return self.node.func.slice

    @property
    def kwargs(self) -> dict[str, ast.expr]:
        return {k.arg: k.value for k in self.node.keywords if k.arg}

    def arg_nodes(self, params: tuple[str, ...]) -> dict[str, ast.expr]:
        """Kernel parameter -> the expression passed for it (positional args stop at a `*args`)."""
        out: dict[str, ast.expr] = {}
        for name, arg in zip(params, self.node.args):
            if isinstance(arg, ast.Starred):
                break
            out[name] = arg
        out.update(self.kwargs)
        return out


@dataclass(frozen=True)
class Variant:
    """One way a kernel runs: constexpr values and launch options known for one launch x config x
    input group. `nodes` says where each value was written, so findings point at it."""

    kind: str  # "launch", "autotune" or "default"
    anchor: ast.AST
    values: dict[str, Any]
    nodes: dict[str, ast.AST]
    launch: Launch | None = None
    group: str | None = None
    grid: tuple[int, ...] | None = None

    def int(self, name: str) -> int | None:
        v = self.values.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def num_warps(self) -> int:
        return self.int("num_warps") or 4

    def num_stages(self, target: Target) -> int:
        v = self.int("num_stages")
        return target.default_num_stages if v is None else v

    def where(self, name: str) -> ast.AST:
        return self.nodes.get(name, self.anchor)


@dataclass
class HostFunction:
    node: ast.FunctionDef
    cls: str | None
    launches: list[Launch] = field(default_factory=list)

    @property
    def is_forward(self) -> bool:
        return self.node.name == "forward" and (self.cls or "").startswith("ModelNew")


@dataclass
class Context:
    path: str
    source: str
    target: Target
    tree: ast.Module | None = None
    syntax_error: SyntaxError | None = None
    # What `ast` said of a file newer than this Python, which was then read through `syntax.lowered`.
    newer_syntax: SyntaxError | None = None
    names: dict[str, str] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)
    kernels: dict[str, Kernel] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    functions: list[HostFunction] = field(default_factory=list)
    inputs: list[tuple[str, list]] = field(default_factory=list)
    evaluator: Evaluator | None = None
    # Indexes that rules build once per file and share (a host function's asserts, its assignments).
    memo: dict[tuple[str, int], tuple[ast.AST, Any]] = field(default_factory=dict, repr=False)

    def indexed(self, what: str, scope: ast.AST, build: Callable[[ast.AST], Any]) -> Any:
        """`build(scope)`, computed once per file for each (`what`, `scope`)."""
        entry = self.memo.get((what, id(scope)))
        if entry is None or entry[0] is not scope:
            entry = self.memo[(what, id(scope))] = (scope, build(scope))
        return entry[1]

    @cached_property
    def lines(self) -> list[str]:
        return source_lines(self.source)

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def char_col(self, lineno: int, byte_col: int | None) -> int | None:
        """ast columns count UTF-8 bytes; findings count characters."""
        if byte_col is None:
            return None
        text = self.line(lineno)
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))

    def location(self, node: ast.AST) -> Location:
        line = getattr(node, "lineno", 1) or 1
        end_line = getattr(node, "end_lineno", None)
        return Location(
            self.path,
            line,
            self.char_col(line, getattr(node, "col_offset", 0)) or 0,
            end_line,
            self.char_col(end_line, getattr(node, "end_col_offset", None)) if end_line else None,
        )

    def qualname(self, node: ast.AST) -> str | None:
        return qualname(node, self.names)

    def launches_of(self, kernel: Kernel) -> list[Launch]:
        return [launch for launch in self.launches if launch.kernel == kernel.name]

    @cached_property
    def _caller_records(self) -> dict[int, list[LaunchRecord] | None]:
        return _caller_records(self)

    def caller_records(self, launch: Launch) -> list[LaunchRecord] | None:
        """The values this launch gets from the file's own callers: its top-level statements (a
        `__main__` block, `result = test_x()`), the module functions nothing in the file calls (test
        functions), and `ModelNew.forward` on `get_inputs()`, each followed down to the launch with
        the tensors (shape, dtype) it builds. None when some in-file caller is not followed (a method,
        a nested function, the launcher passed around as a value) or no evaluation reached the launch:
        then the file does not say what the launch gets. Unlike `Launch.records`, which evaluate each
        launcher on its own with unknown arguments, this is computed on first use, for rules that ask."""
        return self._caller_records.get(id(launch.node))

    @property
    def hot_functions(self) -> list[HostFunction]:
        """Host code that runs on every call: launchers and `ModelNew.forward`."""
        return [f for f in self.functions if f.launches or f.is_forward]

    # variants ---------------------------------------------------------------------------------

    @cached_property
    def _variants(self) -> dict[str, list[Variant]]:
        return {name: _variants(self, k) for name, k in self.kernels.items()}

    def variants(self, kernel: Kernel) -> list[Variant]:
        return self._variants[kernel.name]

    def failing(self, kernel: Kernel, bad: Callable[[Variant], Any]) -> list[Variant]:
        """Variants for which `bad` holds. Autotune configs count only when every one is bad: the
        autotuner would pick a good one otherwise."""
        variants = self.variants(kernel)
        tuned = [v for v in variants if v.kind == "autotune"]
        out = [v for v in variants if v.kind != "autotune" and bad(v)]
        if tuned and all(bad(v) for v in tuned):
            out.extend(tuned)
        return out

    def grid_value(self, grid: Any, meta: dict[str, Any]) -> tuple[int, ...] | None:
        if isinstance(grid, LambdaValue) and self.evaluator is not None:
            grid = self.evaluator.value(grid.node.body, {**grid.env, **_lambda_args(grid, [meta])})
        if isinstance(grid, int) and not isinstance(grid, bool):
            grid = (grid,)
        if (
            isinstance(grid, (tuple, list))
            and grid
            and all(isinstance(g, int) and not isinstance(g, bool) for g in grid)
        ):
            return tuple(grid)
        return None


def _lambda_args(fn: LambdaValue, args: list) -> dict[str, Any]:
    params = [a.arg for a in fn.node.args.args]
    return {p: args[i] if i < len(args) else UNKNOWN for i, p in enumerate(params)}


# building ---------------------------------------------------------------------------------------


def build_context(source: str, path: str, target: Target) -> Context:
    ctx = Context(path=path, source=source, target=target)
    try:
        ctx.tree, ctx.newer_syntax = syntax.parse_any(source, filename=path)
    except SyntaxError as err:
        ctx.syntax_error = err
        return ctx
    except ValueError as err:  # null bytes (Python < 3.12 raises ValueError, not SyntaxError)
        ctx.syntax_error = SyntaxError(str(err), (path, 1, 1, "", 1, 1))
        return ctx
    ctx.names = import_map(ctx.tree)
    evaluator = Evaluator(ctx.names, {}, {}, set())
    ctx.constants = evaluator.run_module(ctx.tree.body)
    evaluator.globals = ctx.constants
    ctx.evaluator = evaluator
    module_defs = {s.name: s for s in ctx.tree.body if isinstance(s, ast.FunctionDef)}
    wrapped = wrapped_by_assignment(ctx.tree)
    for fn in ast.walk(ctx.tree):
        if isinstance(fn, ast.FunctionDef):
            kernel = _kernel(fn, ctx, module_defs, decorators_of(fn, wrapped))
            if kernel is not None:
                ctx.kernels.setdefault(kernel.name, kernel)
    _find_launches(ctx, ctx.tree, None, None, None)
    evaluator.functions = {n: f for n, f in module_defs.items() if n not in ctx.kernels}
    evaluator.launch_nodes = {id(launch.node) for launch in ctx.launches}
    _evaluate_host(ctx, evaluator)
    by_node = {id(launch.node): launch for launch in ctx.launches}
    for record in evaluator.records:
        by_node[id(record.node)].records.append(record)
    return ctx


def _kernel(fn: ast.FunctionDef, ctx: Context, module_defs, decorator_list: list[ast.expr]) -> Kernel | None:
    """The kernel `fn` is, where its decorators (`decorator_list`: its own and those applied by assignment,
    outermost first) make it one."""
    decorators = [(ctx.qualname(d.func if isinstance(d, ast.Call) else d), d) for d in decorator_list]
    if not any(is_triton_jit(name) for name, _ in decorators):
        return None
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    params = tuple(a.arg for a in args)
    constexprs = frozenset(
        a.arg for a in args if a.annotation is not None and (ctx.qualname(a.annotation) or "").endswith("constexpr")
    )
    defaults: dict[str, tuple[Any, ast.AST]] = {}
    positional = fn.args.posonlyargs + fn.args.args
    for a, d in zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults):
        defaults[a.arg] = (ctx.evaluator.value(d, {}), d)
    for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
        if d is not None:
            defaults[a.arg] = (ctx.evaluator.value(d, {}), d)
    kernel = Kernel(
        fn.name, fn, ctx.names, params, constexprs, {k: v for k, v in defaults.items() if v[0] is not UNKNOWN}
    )
    for name, deco in decorators:
        if not isinstance(deco, ast.Call):
            continue
        kw = {k.arg: k.value for k in deco.keywords if k.arg}
        if is_triton_jit(name) and "do_not_specialize" in kw:
            spec = ctx.evaluator.value(kw["do_not_specialize"], {})
            if isinstance(spec, (list, tuple)):
                kernel.do_not_specialize = frozenset(
                    params[s] if isinstance(s, int) and 0 <= s < len(params) else s
                    for s in spec
                    if isinstance(s, (str, int))
                )
        elif name == "triton.heuristics":
            values = kw.get("values") or (deco.args[0] if deco.args else None)
            if isinstance(values, ast.Dict):
                kernel.heuristics = frozenset(k.value for k in values.keys if isinstance(k, ast.Constant))
        elif name == "triton.autotune":
            kernel.autotune = deco
            configs = kw.get("configs") or (deco.args[0] if deco.args else None)
            kernel.configs = tuple(_configs(configs, ctx, module_defs, depth=0)) if configs else ()
    return kernel


def _configs(expr: ast.AST, ctx: Context, module_defs, depth: int, env=None) -> list[Config]:
    """Expand an autotune `configs=` expression to Configs: literals, comprehensions, module lists,
    functions that return a list, and `+` of those. Anything else gives none (rules stay quiet)."""
    env = env or {}
    if depth > 4:
        return []
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [c for e in expr.elts for c in _configs(e, ctx, module_defs, depth + 1, env)]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _configs(expr.left, ctx, module_defs, depth + 1, env) + _configs(
            expr.right, ctx, module_defs, depth + 1, env
        )
    if isinstance(expr, ast.Name):
        value = _module_assignment(ctx.tree, expr.id)
        return _configs(value, ctx, module_defs, depth + 1, env) if value is not None else []
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in module_defs:
        returns = [n for n in ast.walk(module_defs[expr.func.id]) if isinstance(n, ast.Return) and n.value]
        return _configs(returns[0].value, ctx, module_defs, depth + 1, env) if len(returns) == 1 else []
    if isinstance(expr, ast.ListComp):
        return _comprehension(expr, ctx, module_defs, depth, env)
    if isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "triton.Config":
        return [_config(expr, ctx, env)]
    return []


def _comprehension(expr: ast.ListComp, ctx: Context, module_defs, depth: int, env) -> list[Config]:
    pools, targets = [], []
    for gen in expr.generators:
        pool = ctx.evaluator.value(gen.iter, env)
        if not isinstance(pool, (list, tuple)) or not isinstance(gen.target, ast.Name):
            return []
        pools.append(pool)
        targets.append(gen.target.id)
    out: list[Config] = []
    for combo in itertools.islice(itertools.product(*pools), MAX_CONFIGS):
        scope = {**env, **dict(zip(targets, combo))}
        conds = [ctx.evaluator.value(c, scope) for g in expr.generators for c in g.ifs]
        if any(c is not UNKNOWN and not c for c in conds):
            continue
        out.extend(_configs(expr.elt, ctx, module_defs, depth + 1, scope))
    return out


def _config(call: ast.Call, ctx: Context, env) -> Config:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    values = kw.get("kwargs") or (call.args[0] if call.args else None)
    kwargs: dict[str, tuple[Any, ast.AST]] = {}
    if isinstance(values, ast.Dict):
        for k, v in zip(values.keys, values.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                kwargs[k.value] = (ctx.evaluator.value(v, env), v)

    def option(name: str):
        return (ctx.evaluator.value(kw[name], env), kw[name]) if name in kw else None

    return Config(call, kwargs, option("num_warps"), option("num_stages"))


def _module_assignment(tree: ast.Module, name: str) -> ast.expr | None:
    found = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            found = stmt.value
    return found


def _find_launches(ctx: Context, node: ast.AST, fn: HostFunction | None, cls: str | None, loop) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if child.name in ctx.kernels and ctx.kernels[child.name].node is child:
                continue
            host = HostFunction(child, cls)
            ctx.functions.append(host)
            _find_launches(ctx, child, host, cls, None)
        elif isinstance(child, ast.ClassDef):
            _find_launches(ctx, child, fn, child.name, loop)
        elif isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
            _find_launches(ctx, child, fn, cls, child)
        else:
            name = _launched_kernel(child, ctx)
            if name is not None:
                launch = Launch(name, child, fn.node if fn else None, cls, loop)
                ctx.launches.append(launch)
                if fn is not None:
                    fn.launches.append(launch)
            _find_launches(ctx, child, fn, cls, loop)


def _launched_kernel(node: ast.AST, ctx: Context) -> str | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
        return None
    target = node.func.value
    if isinstance(target, ast.Call) and is_kernel_wrapper(ast.unparse(target.func)) and len(target.args) == 1:
        target = target.args[0]  # `wrap_triton(kernel)[grid](...)`
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
    return name if name in ctx.kernels else None


def _evaluate_host(ctx: Context, ev: Evaluator) -> None:
    ctx.inputs = _input_groups(ctx, ev)
    for host in ctx.functions:
        if not host.is_forward:
            continue
        for group, tensors in ctx.inputs or [(None, [])]:
            ev.group, ev.steps = group, 0
            ev.call_function(host.node, [UNKNOWN, *tensors])
    seen = {id(r.node) for r in ev.records}
    for host in ctx.functions:
        if any(id(launch.node) not in seen for launch in host.launches):
            ev.group, ev.steps = None, 0
            ev.call_function(host.node, [])


class _CallerEvaluator(Evaluator):
    """The host evaluator, strict about dtypes where a rule decides on them: a cast to something it
    cannot read (`x.to(dtype)` with `dtype` unknown, `empty_like(x, dtype=d)`) gives the dtype
    "unknown" instead of keeping the source tensor's. Moves to a device keep the dtype."""

    def tensor_method(self, t: TensorSpec, attr: str, args: list, node: ast.Call, env) -> Any:
        out = super().tensor_method(t, attr, args, node, env)
        if attr == "to" and isinstance(out, TensorSpec) and out.dtype == t.dtype:
            casts = [a for a, n in zip(args, node.args) if a is UNKNOWN and not _is_device(n)]
            casts += [k.value for k in node.keywords if k.arg == "dtype" and self.eval(k.value, env) is UNKNOWN]
            if casts:
                return TensorSpec(out.shape, "unknown")
        return out

    def builtin(self, name: str, args: list, kwargs: dict) -> Any:
        out = super().builtin(name, args, kwargs)
        if isinstance(out, TensorSpec) and "dtype" in kwargs and kwargs["dtype"] is UNKNOWN:
            return TensorSpec(out.shape, "unknown")
        return out


def _is_device(node: ast.AST) -> bool:
    """`x.to(y.device)`, `x.to(device)`, `x.to("cuda")`: a move, not a cast."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "device" in name.lower() or name in ("dev", "DEVICE")


CALLER_DEPTH = 4  # module statement -> test function -> wrapper -> helper that launches
CALLER_BUDGET = 20_000  # host expressions for all of a file's callers together (real files: under 600)


def _caller_records(ctx: Context) -> dict[int, list[LaunchRecord] | None]:
    if ctx.tree is None or not ctx.launches or ctx.evaluator is None:
        return {}
    defs = {s.name: s for s in ctx.tree.body if isinstance(s, ast.FunctionDef) and s.name not in ctx.kernels}
    # Who calls each module function: None for module level, else the innermost enclosing def.
    callers: dict[str, list[ast.AST | None]] = {}
    escaped: set[str] = set()

    def walk(node: ast.AST, scope: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if not (isinstance(child, ast.FunctionDef) and child.name in ctx.kernels):
                    walk(child, child)
                continue
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in defs:
                callers.setdefault(child.func.id, []).append(scope)
                for sub in [*child.args, *child.keywords]:
                    walk(sub, scope)
                continue
            if isinstance(child, ast.Name) and child.id in defs and isinstance(child.ctx, ast.Load):
                escaped.add(child.id)  # passed as a value: called from somewhere not followed
            walk(child, scope)

    walk(ctx.tree, None)
    module_nodes = {id(f): name for name, f in defs.items()}
    forwards = [h for h in ctx.functions if h.is_forward]
    evaluated = {id(h.node) for h in forwards} if ctx.inputs else set()
    launching = {id(h.node) for h in ctx.functions if h.launches}
    calls = {
        name: {
            n.func.id
            for n in ast.walk(f)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defs
        }
        for name, f in defs.items()
    }
    reach: dict[str, bool] = {}

    def reaches(name: str) -> bool:
        """Whether calling this module function can launch a kernel."""
        if name not in reach:
            reach[name] = False
            reach[name] = id(defs[name]) in launching or any(reaches(c) for c in calls[name])
        return reach[name]

    complete: dict[str, bool] = {}

    def followed(name: str) -> bool:
        if name not in complete:
            complete[name] = False  # a cycle counts as not followed
            complete[name] = name not in escaped and all(
                scope is None
                or id(scope) in evaluated
                or (id(scope) in module_nodes and followed(module_nodes[id(scope)]))
                for scope in callers.get(name, ())
            )
        return complete[name]

    ev = _CallerEvaluator(ctx.names, ctx.constants, dict(defs), {id(launch.node) for launch in ctx.launches})
    ev.max_depth = CALLER_DEPTH
    env: dict[str, Any] = {}
    spent = 0

    def entry(run: Callable[[], Any]) -> None:
        nonlocal spent
        if spent > CALLER_BUDGET:
            ev.cut = True  # a file of many entry points: stop, and say nothing
            return
        ev.steps = 0
        try:
            run()
        except _OutOfBudget:
            ev.cut = True
        except _Return:  # a stray `return` at module level: the statement says nothing more
            pass
        spent += ev.steps

    for stmt in ctx.tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            entry(lambda stmt=stmt: ev.run([stmt], env))
    for name, fn in defs.items():
        if name not in callers and name not in escaped and reaches(name):
            entry(lambda fn=fn: ev.call_function(fn, []))
    for host in forwards:
        for group, tensors in ctx.inputs:
            ev.group = group
            entry(lambda host=host, tensors=tensors: ev.call_function(host.node, [UNKNOWN, *tensors]))
    if ev.cut:
        return {}  # some path went unfollowed: no launch's callers are all known
    found: dict[int, list[LaunchRecord]] = {}
    for record in ev.records:
        found.setdefault(id(record.node), []).append(record)
    out: dict[int, list[LaunchRecord] | None] = {}
    for launch in ctx.launches:
        fn = launch.function
        if fn is None:
            ok = True  # launched at module level
        elif id(fn) in module_nodes:
            ok = followed(module_nodes[id(fn)])
        else:
            ok = any(h.node is fn and h.is_forward for h in forwards) and bool(ctx.inputs)
        out[id(launch.node)] = found.get(id(launch.node)) if ok else None
    return out


def _input_groups(ctx: Context, ev: Evaluator) -> list[tuple[str, list]]:
    for name in ("get_input_groups", "get_inputs"):
        fn = ev.functions.get(name)
        if fn is None:
            continue
        ev.steps = 0
        value = ev.call_function(fn, [])
        if name == "get_input_groups" and isinstance(value, dict):
            groups = []
            for key, group in value.items():
                if isinstance(group, LambdaValue):  # groups drawn lazily: {"name": lambda: [...]}
                    group = ev.value(group.node.body, dict(group.env))
                if isinstance(group, (list, tuple)):
                    groups.append((str(key), list(group)))
            return groups
        if name == "get_inputs" and isinstance(value, (list, tuple)):
            return [("default", list(value))]
    return []


def _variants(ctx: Context, kernel: Kernel) -> list[Variant]:
    if kernel.configs == ():
        return []  # autotuned over configs we cannot read: no value is known
    base = {k: v for k, (v, _) in kernel.defaults.items()}
    base_nodes = {k: n for k, (_, n) in kernel.defaults.items()}
    runs: list[tuple[Launch | None, LaunchRecord | None]] = []
    for launch in ctx.launches_of(kernel):
        runs.extend((launch, r) for r in launch.records) if launch.records else runs.append((launch, None))
    out: list[Variant] = []
    seen: set = set()
    for launch, record in runs or [(None, None)]:
        values, nodes = dict(base), dict(base_nodes)
        if launch is not None:
            arg_nodes = launch.arg_nodes(kernel.params)
            nodes.update(arg_nodes)
            if record is not None:
                named = dict(zip(kernel.params, record.args))
                named.update(record.kwargs)
                values.update({k: v for k, v in named.items() if v is not UNKNOWN})
        configs = kernel.configs or ()
        for cfg in configs or [None]:
            v, n = dict(values), dict(nodes)
            if cfg is not None:
                for k, (value, node) in cfg.kwargs.items():
                    v[k], n[k] = value, node
                for k in ("num_warps", "num_stages"):
                    opt = getattr(cfg, k)
                    if opt is not None:
                        v[k], n[k] = opt
            v = {k: x for k, x in v.items() if x is not UNKNOWN and not isinstance(x, TensorSpec)}
            grid = ctx.grid_value(record.grid, v) if record is not None else None
            kind = "autotune" if cfg is not None else "launch" if launch is not None else "default"
            anchor = cfg.node if cfg is not None else launch.node if launch is not None else kernel.node
            key = (kind, id(anchor), repr(sorted(v.items(), key=lambda kv: kv[0])), grid)
            if key not in seen:
                seen.add(key)
                out.append(Variant(kind, anchor, v, n, launch, record.group if record else None, grid))
    return out
