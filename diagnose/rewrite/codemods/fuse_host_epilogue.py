"""fuse-host-epilogue: an elementwise PyTorch op the host applies to a kernel's output moves into the kernel."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import fit_launch, insert_after, operand, relaunch, replace, statement, unique_name
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import block_of, LaunchSite, launch_sites, with_kernel_name
from diagnose.rewrite.source import (
    EFFECTS,
    Kernel,
    calls,
    code,
    dotted,
    is_number,
    is_tl_call,
    keyword,
    kernels,
    module_names,
    names,
    pointer_bases,
    positional,
    walk,
)

# torch elementwise op -> (its value in Triton over `{x}`, whether it computes in fp32, its extra
# parameters with their defaults: literals the host passes by position or keyword).
OPS: dict[str, tuple[str, bool, tuple[tuple[str, str | None], ...]]] = {
    "sigmoid": ("tl.sigmoid({x})", True, ()),
    "relu": ("tl.where({x} < 0, 0.0, {x})", False, ()),
    "relu6": ("tl.where({x} < 0, 0.0, tl.where({x} > 6, 6.0, {x}))", False, ()),
    "tanh": ("2 * tl.sigmoid(2 * {x}) - 1", True, ()),
    "exp": ("tl.exp({x})", True, ()),
    "log": ("tl.log({x})", True, ()),
    "sqrt": ("tl.sqrt({x})", True, ()),
    "rsqrt": ("tl.rsqrt({x})", True, ()),
    "abs": ("tl.abs({x})", False, ()),
    "neg": ("-{x}", False, ()),
    "square": ("{x} * {x}", False, ()),
    "silu": ("{x} * tl.sigmoid({x})", True, ()),
    "gelu": ("0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))", True, (("approximate", "'none'"),)),
    "leaky_relu": ("tl.where({x} < 0, {x} * {negative_slope}, {x})", False, (("negative_slope", "0.01"),)),
    "hardtanh": (
        "tl.where({x} < {min_val}, {min_val}, tl.where({x} > {max_val}, {max_val}, {x}))",
        False,
        (("min_val", "-1.0"), ("max_val", "1.0")),
    ),
    "clamp": ("tl.where({x} < {min}, {min}, tl.where({x} > {max}, {max}, {x}))", False, (("min", None), ("max", None))),
    "mul": ("{x} * {other}", False, (("other", None),)),
    "add": ("{x} + {other}", False, (("other", None),)),
    "sub": ("{x} - {other}", False, (("other", None),)),
    "div": ("{x} / {other}", False, (("other", None),)),
}
ALIASES = {"clip": "clamp", "negative": "neg", "multiply": "mul", "subtract": "sub", "divide": "div"}
X = "__x__"  # the stored value, in an op's Triton text until it is named
NAMESPACES = ("torch", "torch.nn.functional", "F", "nn.functional", "torch.special")
ARITHMETIC = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/"}
ALLOCATIONS = ("empty", "empty_like", "new_empty", "empty_strided")
# What a host may read of the output before the launch: its layout, never its values.
LAYOUT = {"shape", "stride", "size", "numel", "dim", "ndim", "device", "dtype", "element_size", "is_contiguous"}


@dataclass(frozen=True)
class EpiloguePlan:
    site: LaunchSite
    kernel: Kernel
    param: str  # the kernel's pointer parameter the launch writes `tensor` through
    tensor: str  # the host's name for the output
    statement: cst.SimpleStatementLine  # the host statement applying the op
    expression: cst.CSTNode  # the op's expression in it (the whole call, for an in-place op)
    value: str  # the op in Triton over X
    fp32: bool  # whether it computes on fp32
    ops: tuple[str, ...]  # the ops, outermost last


class FuseHostEpilogue(Rewrite):
    """## What it changes
    A launch that writes a tensor the host allocated (`out = torch.empty(...)`, then
    `kernel[grid](..., out, ...)`), followed by an elementwise PyTorch op on that tensor and number
    literals — `return torch.sigmoid(out)`, `y = F.relu(out) * 0.5`, `out = out * 0.125`,
    `out.tanh_()` — gets a twin of the kernel that applies the op to the value before each store
    through that pointer (`tl.store(out_ptr + offs, tl.sigmoid(acc.to(tl.float32)), mask=m)`); the
    launch calls the twin and the host uses `out` itself where it applied the op. The original kernel
    stays for its other launches. Ops: sigmoid, relu, relu6, tanh, exp, log, sqrt, rsqrt, abs, neg,
    square, silu, gelu (exact), leaky_relu, hardtanh, clamp/clip with literal bounds, and `+ - * /`
    with literals, as `torch.X(out)`, `F.X(out)`, `out.X()` or `out.X_()`.

    ## When it is valid
    The tensor is bound once in the host, to an uninitialised allocation (`torch.empty`, `empty_like`,
    `new_empty`, `empty_strided`), so it aliases no input and every element that matters is one the
    kernel stores; before the launch the host reads only its layout (`out.shape`, `out.stride(0)`).
    The kernel stores through that pointer and never loads it or makes it an atomic target; the launch
    passes the tensor once (not also as an input). The op is
    in the first statement after the launch (same block, not in a loop) that names the tensor; with
    an out-of-place op (`y = torch.sigmoid(out)`, `return ...`) nothing after reads the tensor again,
    since it now holds the op's result; `out = op(out)` and in-place ops may be followed by anything.
    The op's other operands are number literals (a tensor operand would need a pointer of its own).

    ## Why it is faster
    The op reads and writes the whole output once more, as a separate kernel launch: for a GEMV or
    a reduction whose output is small it is a launch's latency; for an elementwise or matmul output
    it doubles the traffic of the store. Applied in the kernel it costs a few instructions on values
    already in registers. First versions leave such epilogues to PyTorch often (a GEMV + sigmoid ran
    at 19-37% of its roofline bound).

    ## Safety
    Safe: the same function of each element. Transcendental ops compute on fp32 in the kernel
    (PyTorch also upcasts half inputs internally), and the value is rounded once, at the store,
    instead of twice, so results may differ in the last bit from the unfused version. `tanh` is
    `2 * sigmoid(2x) - 1` (the interpreter's `tl` has no tanh), absolutely within 1e-7 of it.

    ## Answers
    TRI030 (host-epilogue-after-launch).

    ## References
    Triton tutorial 03-matrix-multiplication (`leaky_relu` fused into the matmul's epilogue); PyTorch
    Inductor's epilogue fusion.
    """

    id = "fuse-host-epilogue"
    title = "Apply the host's elementwise op on a kernel's output inside the kernel"
    codes = ("TRI030",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        found = kernels(ctx.module)
        reasons = []
        for site in launch_sites(ctx.module, found):
            plan = _plan(ctx.module, found[site.kernel], site)
            if isinstance(plan, EpiloguePlan):
                ops = " then ".join(plan.ops)
                return Precondition.yes(
                    f"{site.host_name} applies {ops} to `{plan.tensor}` after {site.kernel} wrote it",
                    (site.kernel,),
                    plan,
                )
            if plan:
                reasons.append(f"{site.host_name}: {plan}")
        return Precondition.no("; ".join(reasons) or "no launch's output goes through an elementwise PyTorch op")

    def transform(self, ctx: RewriteContext, plan: EpiloguePlan) -> str:
        kernel = plan.kernel
        twin = unique_name(
            module_names(ctx.module), f"{kernel.name.removesuffix('_kernel')}_{'_'.join(plan.ops)}_kernel"
        )
        taken = names(kernel.node) | set(kernel.params)
        stored = {}
        for store in _stores(kernel, plan.param):
            stored[store] = (_stored_value(store), unique_name(taken, f"pre_{plan.ops[0]}"))
        lines: dict[cst.CSTNode, cst.CSTNode] = {}
        for line in (n for n in walk(kernel.node.body) if isinstance(n, cst.SimpleStatementLine)):
            inside = [s for s in stored if any(c is s for c in walk(line))]
            if not inside:
                continue
            (store,) = inside
            value, x = stored[store]
            cast = f"{operand(value.value)}.to(tl.float32)" if plan.fp32 else code(value.value)
            new_store = replace(line, {value: value.with_changes(value=cst.parse_expression(plan.value.replace(X, x)))})
            lines[line] = cst.FlattenSentinel(
                [
                    statement(f"{x} = {cast}\n").with_changes(leading_lines=line.leading_lines),
                    new_store.with_changes(leading_lines=[]),
                ]
            )
        note = cst.EmptyLine(
            comment=cst.Comment(f"# {kernel.name} with the host's {' then '.join(plan.ops)} applied before the store")
        )
        body = replace(kernel.node.body, lines)
        fused = kernel.node.with_changes(name=cst.Name(twin), body=body, leading_lines=[note])
        call = plan.site.call.with_changes(
            func=plan.site.call.func.with_changes(value=with_kernel_name(plan.site.call.func.value, twin))
        )
        host_edit: cst.CSTNode
        small = plan.statement.body[0]
        if plan.expression is getattr(small, "value", None) and (
            isinstance(small, cst.Expr)
            or (isinstance(small, cst.Assign) and code(small.targets[0].target) == plan.tensor)
        ):
            host_edit = cst.RemoveFromParent()  # `out.tanh_()`, `out = out * 2`: nothing left to do
        else:
            host_edit = replace(plan.statement, {plan.expression: cst.Name(plan.tensor)})
        module = replace(
            ctx.module,
            {plan.site.statement: relaunch(plan.site, fit_launch(plan.site, call)), plan.statement: host_edit},
        )
        return insert_after(module, kernels(module)[kernel.name].node, [fused]).code


def _plan(module: cst.Module, kernel: Kernel, site: LaunchSite) -> EpiloguePlan | str | None:
    written = _written(kernel)
    candidates = []
    for param in written:
        value = site.value(kernel, param)
        if isinstance(value, cst.Name):
            candidates.append((param, value.value))
    if not candidates:
        return None
    block = block_of(site.host, site.statement)
    if block is None:
        return None
    block = block[next(i for i, stmt in enumerate(block) if stmt is site.statement) + 1 :]
    found = None
    for param, tensor in candidates:
        plan = _epilogue(kernel, site, block, param, tensor)
        if isinstance(plan, EpiloguePlan):
            return plan
        found = found or plan
    return found


def _epilogue(
    kernel: Kernel, site: LaunchSite, after: list[cst.BaseStatement], param: str, tensor: str
) -> EpiloguePlan | str | None:
    user = next((s for s in after if tensor in names(s)), None)
    if not isinstance(user, cst.SimpleStatementLine) or len(user.body) != 1:
        return None
    small = user.body[0]
    expression, ops, value, fp32 = _outermost(small, tensor)
    if expression is None:
        return None
    if isinstance(ops, str):
        return ops
    if sum(_passes_values(arg.value, tensor) for arg in site.call.args) != 1:
        return f"`{tensor}` is passed to {kernel.name} more than once (the kernel may read what it writes)"
    if not _allocated_empty(site, tensor):
        return f"`{tensor}` is not a fresh torch.empty allocation of {site.host_name} (it may alias an input)"
    in_place = isinstance(small, cst.Expr) and expression is small.value and ops[-1].endswith("_")
    if any(op.endswith("_") for op in (ops if not in_place else ops[:-1])):
        return f"an in-place op on `{tensor}` inside a larger expression"
    rebinds = isinstance(small, cst.Assign) and code(small.targets[0].target) == tensor
    rest = after[after.index(user) + 1 :]
    beside = _occurrences(small, tensor) - _occurrences(expression, tensor) - (1 if rebinds else 0)
    if beside or (not (in_place or rebinds) and any(tensor in names(s) for s in rest)):
        return f"`{tensor}` is read again after {' then '.join(ops)}; fused, it would hold the op's result"
    if _read_in_loop(site):
        return f"the launch of {kernel.name} is in a loop"
    clean = tuple(op.rstrip("_") for op in ops)
    return EpiloguePlan(site, kernel, param, tensor, user, expression, value, fp32, clean)


def _occurrences(node: cst.CSTNode, name: str) -> int:
    return sum(1 for n in walk(node) if isinstance(n, cst.Name) and n.value == name)


def _passes_values(expr: cst.BaseExpression, tensor: str) -> bool:
    """Whether an argument hands the kernel `tensor`'s memory (`out`, `out[1:]`, `out.view(-1)`), not only
    its layout (`out.stride(0)`, `out.shape[1]`)."""
    layout = {id(n.value) for n in walk(expr) if isinstance(n, cst.Attribute) and n.attr.value in LAYOUT}
    return any(isinstance(n, cst.Name) and n.value == tensor and id(n) not in layout for n in walk(expr))


def _operand(text: str) -> str:
    return text if is_number(cst.parse_expression(text)) else operand(text)


def _outermost(small: cst.BaseSmallStatement, tensor: str):
    """(the largest expression of `small` that is an elementwise op chain over `tensor` and literals,
    the op names or why not, its Triton value, whether it needs fp32); (None, ...) when `tensor` is
    not under any op."""
    top = getattr(small, "value", None)
    if top is None:
        return None, None, None, False
    best = None
    for node in walk(top):
        if not isinstance(node, (cst.Call, cst.BinaryOperation, cst.UnaryOperation)) or tensor not in names(node):
            continue
        translated = _translate(node, tensor)
        if translated is not None and not isinstance(translated, str):
            return node, *translated
        if isinstance(translated, str) and best is None:
            best = (node, translated, None, False)
    return best or (None, None, None, False)


def _translate(node: cst.CSTNode, tensor: str) -> tuple[tuple[str, ...], str, bool] | str | None:
    """(ops, Triton value over `{x}`, needs fp32) of an op chain over `tensor` and number literals;
    a reason when it is an op on the tensor that cannot move; None when it is not an op chain."""
    if isinstance(node, cst.Name) and node.value == tensor:
        return (), X, False
    if is_number(node):
        return (), code(node), False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _translate(node.expression, tensor)
        if not isinstance(inner, tuple):
            return inner
        return (*inner[0], "neg"), f"-{_operand(inner[1])}", inner[2]
    if isinstance(node, cst.BinaryOperation):
        symbol = ARITHMETIC.get(type(node.operator))
        left, right = _translate(node.left, tensor), _translate(node.right, tensor)
        if symbol is None or not isinstance(left, tuple) or not isinstance(right, tuple):
            if tensor in names(node) and symbol is not None:
                return f"`{code(node)}` combines `{tensor}` with a value that is not a number literal"
            return None
        ops = (*left[0], *right[0], {"+": "add", "-": "sub", "*": "mul", "/": "div"}[symbol])
        return ops, f"{_operand(left[1])} {symbol} {_operand(right[1])}", left[2] or right[2]
    if isinstance(node, cst.Call):
        op, argument, args = _op_call(node, tensor)
        if op is None:
            return None
        base = ALIASES.get(op.rstrip("_"), op.rstrip("_"))
        if base not in OPS:
            return f"`{code(node.func)}` is not an elementwise op this rewrite moves"
        template, fp32, params = OPS[base]
        values = _parameters(params, args)
        if isinstance(values, str):
            return values
        inner = _translate(argument, tensor)
        if not isinstance(inner, tuple):
            return inner
        value = template.format(x=_operand(inner[1]), **values)
        return (*inner[0], op if op.endswith("_") else base), value, fp32 or inner[2]
    return None


def _op_call(call: cst.Call, tensor: str) -> tuple[str | None, cst.BaseExpression | None, list[cst.Arg]]:
    """(op name, its tensor operand, its other arguments) of `torch.X(t, ...)`, `F.X(t, ...)` or
    `t.X(...)`; (None, None, []) for other calls."""
    func = dotted(call.func)
    if func is None:
        return None, None, []
    head, _, op = func.rpartition(".")
    if head in NAMESPACES and call.args and call.args[0].keyword is None:
        return op, call.args[0].value, list(call.args[1:])
    if isinstance(call.func, cst.Attribute) and tensor in names(call.func.value) and head not in NAMESPACES:
        return op, call.func.value, list(call.args)
    return None, None, []


def _parameters(params: tuple[tuple[str, str | None], ...], args: list[cst.Arg]) -> dict[str, str] | str:
    """The op's extra parameters from `args` (by position or keyword), each a literal; defaults filled."""
    values: dict[str, str] = {}
    for i, arg in enumerate(args):
        if arg.keyword is None:
            if i >= len(params):
                return "an op with more arguments than it takes"
            name = params[i][0]
        else:
            name = arg.keyword.value
        if name == "inplace" and code(arg.value) == "False":
            continue
        if name not in dict(params):
            return f"an op's argument `{name}` this rewrite does not take"
        if name == "approximate":
            if code(arg.value).strip("'\"") != "none":
                return "gelu with approximate='tanh'"
            continue
        if not is_number(arg.value):
            return f"an op's `{name}` that is not a number literal"
        values[name] = code(arg.value)
    for name, default in params:
        if name == "approximate":
            continue
        if name not in values:
            if default is None:
                return f"an op without its `{name}`"
            values[name] = default
    return values


def _written(kernel: Kernel) -> list[str]:
    """Pointer parameters the kernel stores through and never loads or updates atomically."""
    stored: set[str] = set()
    read: set[str] = set()
    for call in calls(kernel.node.body, "load", "store", *[e for e in EFFECTS if e.startswith("atomic")]):
        pointer = keyword(call, "pointer") or (call.args[0] if call.args else None)
        if pointer is not None:
            (stored if is_tl_call(call, "store") else read).update(pointer_bases(kernel, pointer.value))
    return [p for p in kernel.params if p in stored - read]


def _stores(kernel: Kernel, param: str) -> list[cst.Call]:
    return [
        c
        for c in calls(kernel.node.body, "store")
        if (pointer := keyword(c, "pointer") or (c.args[0] if c.args else None)) is not None
        and param in pointer_bases(kernel, pointer.value)
    ]


def _stored_value(store: cst.Call) -> cst.Arg:
    return keyword(store, "value") or positional(store)[1]


def _read_in_loop(site: LaunchSite) -> bool:
    for node in walk(site.host):
        if isinstance(node, (cst.For, cst.While)) and any(n is site.statement for n in walk(node)):
            return True
    return False


def _allocated_empty(site: LaunchSite, tensor: str) -> bool:
    """`tensor` bound once before the launch, to an uninitialised allocation, and read before it only
    for its layout."""
    params = site.host.params
    if tensor in {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}:
        return False
    binding = None
    layout_reads: set[int] = set()
    for node in walk(site.host.body):
        if node is site.statement:
            break
        if isinstance(node, (cst.For, cst.With, cst.AugAssign, cst.AnnAssign)) and tensor in _targets(node):
            return False
        if isinstance(node, cst.Assign) and tensor in _targets(node):
            if binding is not None or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
                return False
            binding = node
            layout_reads.add(id(node.targets[0].target))
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == tensor:
            if node.attr.value in LAYOUT:
                layout_reads.add(id(node.value))
        if isinstance(node, cst.Name) and node.value == tensor and id(node) not in layout_reads:
            return False
    if binding is None or not isinstance(binding.value, cst.Call):
        return False
    func = dotted(binding.value.func)
    return func is not None and func.rpartition(".")[2] in ALLOCATIONS


def _targets(node: cst.CSTNode) -> set[str]:
    if isinstance(node, cst.Assign):
        return set().union(*(names(t.target) for t in node.targets))
    if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        return names(node.target)
    if isinstance(node, cst.For):
        return names(node.target)
    return (
        set().union(*(names(i.asname.name) for i in node.items if i.asname is not None))
        if isinstance(node, cst.With)
        else set()
    )
