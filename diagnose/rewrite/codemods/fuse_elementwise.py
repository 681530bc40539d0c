"""fuse-elementwise: two consecutive elementwise launches, the second reading what the first wrote, become one."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from diagnose import syntax
from diagnose.rewrite.edit import fit_launch, insert_after, relaunch, replace, statement, unique_name
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import block_of, LaunchSite, launch_sites, with_kernel_name
from diagnose.rewrite.source import (
    REDUCTIONS,
    Kernel,
    assigned_names,
    calls,
    code,
    keyword,
    kernels,
    module_names,
    names,
    pointer_params,
    positional,
    read_names,
    same,
    simple_assignment,
    tl_name,
    walk,
)

MAX_FUSIONS = 8


@dataclass(frozen=True)
class FusePlan:
    first: LaunchSite
    second: LaunchSite
    tensor: str  # the intermediate, written by the first and read by the second
    out_param: str  # the first kernel's parameter that receives it
    in_param: str  # the second kernel's parameter that receives it
    keep_store: bool  # the intermediate is read after the second launch


class FuseElementwise(Rewrite):
    """## What it changes
    Two consecutive launches in one block of a function (a module-level `def op(x)`, an autograd
    `Function.forward`, `ModelNew.forward`), `k1[grid](x, t, n, BLOCK=B)` then
    `k2[grid](t, y, n, BLOCK=B)`, where k1 writes the tensor `t` and k2 only reads it, become one
    launch of a fused kernel: k1's body, with the value it stored kept in a variable, then k2's body
    with its loads of `t` replaced by that variable (`tl.where(mask, v, other)` where the load had
    `other=`). Arguments both launches pass alike are shared; k2's names are renamed where they
    clash, except names bound to the same value (the shared `offs`). The store of `t` stays only
    if anything else may read `t`: a statement of the function besides the two launches, or its
    caller (`t` a parameter of the function, or not bound in it). Repeated, so a chain of launches
    fuses into one.

    ## When it is valid
    Both kernels are elementwise (one program id, no loop, reduction, scan, atomic or early
    return), use the same grid and the same launch options, and every load and store of both
    addresses its tensor at the same offsets under the same mask, once the shared arguments are
    substituted: then program i of the second kernel reads exactly the elements program i of the
    first wrote, and no program reads what another writes. k1 stores once, to `t`; `t` is passed
    once to each kernel and is not read by k1. Neither launch unpacks `*args` / `**kwargs` (what
    they pass cannot be compared) nor keeps its result (`h = k1[grid](...)`).

    ## Why it is faster
    The intermediate makes a round trip through HBM (written by one kernel, read by the next):
    fused, a chain of k elementwise kernels moves 2 tensors instead of 2k, and pays one launch.

    ## Safety
    Safe: the same arithmetic per element.

    ## Answers
    TRI011 (unfused-elementwise-launches).

    ## References
    PyTorch Inductor's pointwise fusion; Liger-Kernel fused ops.
    """

    id = "fuse-elementwise"
    title = "Fuse consecutive elementwise launches (the intermediate stays in registers)"
    codes = ("TRI011",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        plan = _find(ctx.module)
        if isinstance(plan, FusePlan):
            return Precondition.yes(
                f"{plan.first.kernel} then {plan.second.kernel} through `{plan.tensor}`",
                (plan.first.kernel, plan.second.kernel),
                plan,
            )
        return Precondition.no(plan or "no two consecutive elementwise launches pass a tensor from one to the next")

    def transform(self, ctx: RewriteContext, plan: FusePlan) -> str:
        module, made = ctx.module, []
        for _ in range(MAX_FUSIONS):
            module, name = fuse(module, plan)
            made.append(name)
            plan = _find(module)
            if not isinstance(plan, FusePlan):
                break
        # the links of a chain fused again are launched nowhere: drop them (the user's kernels stay)
        launched = {s.kernel for s in launch_sites(module)}
        return module.with_changes(
            body=[
                n
                for n in module.body
                if not (isinstance(n, cst.FunctionDef) and n.name.value in made and n.name.value not in launched)
            ]
        ).code


def _elementwise(kernel: Kernel) -> str | None:
    """Why `kernel` is not a plain elementwise kernel, or None."""
    if kernel.autotuned:
        return "autotuned"
    if len(calls(kernel.node.body, "program_id")) != 1 or calls(kernel.node.body, "num_programs"):
        return "not one program id"
    for node in walk(kernel.node.body):
        if isinstance(node, (cst.For, cst.While, cst.Return)):
            return "has a loop or a return"
        name = tl_name(node.func) if isinstance(node, cst.Call) else None
        if name is not None and (name in REDUCTIONS or name.startswith("atomic")):
            return f"tl.{name} is not elementwise"
    return None


class _Canon:
    """Expressions of both kernels in one vocabulary: locals expanded, parameters as their host argument."""

    def __init__(self):
        self.hosts: dict[str, str] = {}

    def host_id(self, text: str) -> str:
        key = ast.dump(syntax.parse(text, mode="eval"))
        return self.hosts.setdefault(key, f"__host{len(self.hosts)}")

    def expand(self, kernel: Kernel, site: LaunchSite, expr: cst.BaseExpression, base: str | None = None) -> str:
        local = {t: v for t, v in (simple_assignment(s) for s in kernel.statements) if t}
        canon = self

        class Sub(ast.NodeTransformer):
            def __init__(self):
                self.depth = 0

            def visit_Name(self, node):
                if node.id == base:
                    return ast.Name("__pointer", ast.Load())
                if node.id in kernel.params:
                    value = site.value(kernel, node.id)
                    return ast.Name(
                        canon.host_id(code(value)) if value is not None else f"__default_{node.id}", ast.Load()
                    )
                if node.id in local and self.depth < 16:
                    self.depth += 1
                    tree = self.visit(syntax.parse(code(local[node.id]).strip(), mode="eval").body)
                    self.depth -= 1
                    return tree
                return node

        return ast.dump(Sub().visit(syntax.parse(code(expr).strip(), mode="eval").body))


def _accesses(kernel: Kernel, site: LaunchSite, canon: _Canon) -> list[tuple[str, str, str, str | None, cst.Call]]:
    """(kind, base param, canonical offset, canonical mask, call) of every load and store."""
    pointers = set(pointer_params(kernel))
    out = []
    for call in calls(kernel.node.body, "load", "store"):
        kind = tl_name(call.func)
        pointer = call.args[0].value
        bases = names(pointer) & pointers
        mask = keyword(call, "mask") or (
            positional(call)[2 if kind == "store" else 1]
            if len(positional(call)) > (2 if kind == "store" else 1)
            else None
        )
        local = {t: v for t, v in (simple_assignment(s) for s in kernel.statements) if t}
        if not bases:  # through one local pointer variable
            for name in names(pointer):
                if name in local:
                    bases |= names(local[name]) & pointers
        base = next(iter(bases)) if len(bases) == 1 else None
        out.append(
            (
                kind,
                base,
                canon.expand(kernel, site, pointer, base),
                canon.expand(kernel, site, mask.value) if mask is not None else None,
                call,
            )
        )
    return out


def _pair(module: cst.Module, first: LaunchSite, second: LaunchSite) -> FusePlan | str:
    found = kernels(module)
    k1, k2 = found[first.kernel], found[second.kernel]
    for kernel in (k1, k2):
        why = _elementwise(kernel)
        if why:
            return f"{kernel.name}: {why}"
    for site in (first, second):
        if any(a.star for a in site.call.args):
            return f"the launch of {site.kernel} unpacks *args / **kwargs"
        if site.assigns:
            return f"the launch of {site.kernel} keeps its result"
    if not same(first.grid, second.grid):
        return "the launches use different grids"
    for option in ("num_warps", "num_stages"):
        a, b = keyword(first.call, option), keyword(second.call, option)
        if (a is None) != (b is None) or (a is not None and not same(a.value, b.value)):
            return f"the launches use different {option}"
    canon = _Canon()
    acc1, acc2 = _accesses(k1, first, canon), _accesses(k2, second, canon)
    shapes = {(offset, mask) for _, _, offset, mask, _ in acc1 + acc2}
    if len(shapes) != 1 or any(base is None for _, base, *_ in acc1 + acc2):
        return "the kernels do not address every tensor at the same offsets under the same mask"
    stores1 = [a for a in acc1 if a[0] == "store"]
    if len(stores1) != 1:
        return f"{k1.name} stores {len(stores1)} times"
    out_param = stores1[0][1]
    tensor = first.value(k1, out_param)
    if not isinstance(tensor, cst.Name):
        return f"{k1.name} writes an expression, not a tensor variable"
    in_params = _receives(k2, second, tensor.value)
    uses1 = _receives(k1, first, tensor.value)
    if len(in_params) != 1 or len(uses1) != 1:
        return f"`{tensor.value}` is not passed once to each kernel"
    in_param = in_params[0]
    if any(kind == "store" and base == in_param for kind, base, *_ in acc2):
        return f"{k2.name} writes `{tensor.value}`"
    return FusePlan(first, second, tensor.value, out_param, in_param, _read_elsewhere(first, second, tensor.value))


def _read_elsewhere(first: LaunchSite, second: LaunchSite, tensor: str) -> bool:
    """Whether anything but the two launches may read `tensor`: a statement of their host (one before
    them too, which a loop may run after them), a function nested in it, or the caller (`tensor` a
    parameter of the host, or a name the host does not bind)."""
    host = first.host
    rest = replace(
        cst.Module(body=[host]), {first.statement: cst.RemoveFromParent(), second.statement: cst.RemoveFromParent()}
    ).body[0]
    params = host.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    if tensor in {p.name.value for p in every} or tensor not in assigned_names(rest.body):
        return True
    return tensor in read_names(rest.body)


def _find(module: cst.Module) -> FusePlan | str | None:
    sites = launch_sites(module)
    reasons = []
    for first, second in zip(sites, sites[1:]):
        if first.host is not second.host:
            continue
        block = block_of(first.host, first.statement)
        if not block or first.statement not in block or second.statement not in block:
            continue
        if block.index(second.statement) != block.index(first.statement) + 1:
            continue
        plan = _pair(module, first, second)
        if isinstance(plan, FusePlan):
            return plan
        reasons.append(f"{first.kernel} -> {second.kernel}: {plan}")
    return "; ".join(reasons) or None


class _Rename(cst.CSTTransformer):
    """Rename variables (never keyword names or attributes)."""

    def __init__(self, mapping: dict[str, str]):
        super().__init__()
        self.mapping = mapping

    def leave_Name(self, original_node, updated_node):
        return updated_node.with_changes(value=self.mapping.get(updated_node.value, updated_node.value))

    def leave_Arg(self, original_node, updated_node):
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_Attribute(self, original_node, updated_node):
        return updated_node.with_changes(attr=original_node.attr)


def fuse(module: cst.Module, plan: FusePlan) -> tuple[cst.Module, str]:
    """The module with the two launches of `plan` fused, and the fused kernel's name."""
    found = kernels(module)
    k1, k2 = found[plan.first.kernel], found[plan.second.kernel]
    first, second = plan.first, plan.second
    canon = _Canon()
    value_name = unique_name(names(k1.node) | set(k1.params) | names(k2.node), plan.tensor)
    taken = names(k1.node) | set(k1.params) | {value_name}
    # k2's parameters: shared with k1 when both launches pass the same expression, else renamed if they clash
    rename: dict[str, str] = {}
    extra: list[str] = []
    for p in k2.params:
        if p == plan.in_param:
            continue
        mine = second.value(k2, p)
        twin = next(
            (
                q
                for q in k1.params
                if first.value(k1, q) is not None and mine is not None and same(first.value(k1, q), mine)
            ),
            None,
        )
        if twin is not None and (p in k2.constexprs) == (twin in k1.constexprs):
            rename[p] = twin
        else:
            new = unique_name(taken | set(extra), p) if p in taken else p
            rename[p] = new
            extra.append(p)
    # k2's locals: a k1 local bound once to the same value stands in for it (the shared offsets);
    # any other clash is renamed
    counts1, counts2 = _binding_counts(k1), _binding_counts(k2)
    same_value = {
        canon.expand(k1, first, v): t for t, v in (simple_assignment(s) for s in k1.statements) if t and counts1[t] == 1
    }
    dropped = set()
    for s in k2.statements:
        target, value = simple_assignment(s)
        if target is None:
            continue
        twin = same_value.get(canon.expand(k2, second, value)) if counts2[target] == 1 else None
        if twin is not None:
            rename[target] = twin
            dropped.add(s)
        elif target in taken | set(rename.values()) and target not in rename:
            rename[target] = unique_name(taken | set(rename.values()), target)
    body = []
    for s in k1.statements:
        store = next((c for c in calls(s, "store")), None)
        if store is not None:
            stored = (keyword(store, "value") or positional(store)[1]).value
            keep = statement(f"{value_name} = {code(stored)}").with_changes(leading_lines=s.leading_lines)
            body.append(keep)
            if plan.keep_store:
                new_store = replace(cst.Module(body=[s]), {stored: cst.Name(value_name)}).body[0]
                body.append(new_store.with_changes(leading_lines=[]))
        else:
            body.append(s)
    loads = {}
    for call in calls(k2.node.body, "load"):
        if plan.in_param in names(call.args[0].value):
            other = keyword(call, "other")
            mask = keyword(call, "mask")
            loads[call] = (
                cst.parse_expression(f"tl.where({code(mask.value)}, {value_name}, {code(other.value)})")
                if other is not None and mask is not None
                else cst.Name(value_name)
            )
    renamer = _Rename(rename)
    for s in k2.statements:
        if s in dropped:
            continue
        s = replace(cst.Module(body=[s]), loads).body[0]
        body.append(s.visit(renamer))
    params = list(k1.node.params.params)
    first_constexpr = next((i for i, p in enumerate(params) if p.name.value in k1.constexprs), len(params))
    added = [
        p.with_changes(name=cst.Name(rename[p.name.value])) for p in k2.node.params.params if p.name.value in extra
    ]
    # k2's tensors and sizes before k1's constexprs, k2's own constexprs last
    params = (
        params[:first_constexpr]
        + [p for p in added if p.name.value not in _renamed(k2.constexprs, rename)]
        + params[first_constexpr:]
        + [p for p in added if p.name.value in _renamed(k2.constexprs, rename)]
    )
    params = [p.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for p in params[:-1]] + [
        params[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    ]
    dead = None if plan.keep_store or plan.out_param in set().union(*(names(s) for s in body)) else plan.out_param
    if dead is not None:  # nothing reads or writes the intermediate any more: neither parameter nor argument
        params = [p for p in params if p.name.value != dead]
        params[-1] = params[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    name = unique_name(
        module_names(module), f"{k1.name.removesuffix('_kernel')}_{k2.name.removesuffix('_kernel')}_kernel"
    )
    note = cst.EmptyLine(
        comment=cst.Comment(f"# {k1.name} then {k2.name}, fused: `{plan.tensor}` stays in registers between them.")
    )
    fused = k1.node.with_changes(
        name=cst.Name(name),
        leading_lines=[note],
        params=k1.node.params.with_changes(params=params),
        body=k1.node.body.with_changes(body=body),
    )
    # the launch: k1's arguments, then k2's that are not shared
    dead_arg = first.arg(k1, dead) if dead is not None else None
    args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in first.call.args if a is not dead_arg]
    for p in extra:  # by keyword: k1's own keywords may come before them
        args.append(
            cst.Arg(
                value=second.value(k2, p),
                keyword=cst.Name(rename[p]),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                ),
            )
        )
    ordered = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]] + args[
        -1:
    ]
    call = first.call.with_changes(
        func=first.call.func.with_changes(value=with_kernel_name(first.call.func.value, name)), args=ordered
    )
    launch = relaunch(
        second,
        fit_launch(second, call),
        leading_lines=[*first.statement.leading_lines, *second.statement.leading_lines],
    )
    module = replace(module, {first.statement: cst.RemoveFromParent(), second.statement: launch})
    anchor = kernels(module)[max((k1.name, k2.name), key=lambda n: list(kernels(module)).index(n))].node
    return insert_after(module, anchor, [fused]), name


def _binding_counts(kernel: Kernel) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in walk(kernel.node.body):
        if isinstance(s, cst.SimpleStatementLine):
            bound = assigned_names(s)
        elif isinstance(s, cst.For):
            bound = names(s.target)
        else:
            continue
        for n in bound:
            counts[n] = counts.get(n, 0) + 1
    return counts


def _renamed(params: tuple[str, ...], rename: dict[str, str]) -> set[str]:
    return {rename.get(p, p) for p in params}


def _receives(kernel: Kernel, site: LaunchSite, tensor: str) -> list[str]:
    """The parameters a launch passes the host variable `tensor` to."""
    values = {p: site.value(kernel, p) for p in kernel.params}
    return [p for p, v in values.items() if isinstance(v, cst.Name) and v.value == tensor]
