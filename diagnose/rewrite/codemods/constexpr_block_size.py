"""constexpr-block-size: a parameter that sizes a block (`tl.arange(0, BLOCK)`) is annotated `tl.constexpr`."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

import libcst as cst

from diagnose import syntax
from diagnose.blocks import Resolve, constexpr_params, sizing_params
from diagnose.rewrite.edit import replace
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, host_assignments, launch_sites
from diagnose.rewrite.source import (
    Kernel,
    dotted,
    kernels,
    language_resolver,
    pointer_params,
    simple_assignment,
    triton_language,
)

# Host calls and tensor methods whose result is a tensor, not a number: never a compile-time value.
TENSOR_MAKERS = ("tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange", "rand", "randn")
TENSOR_METHODS = ("to", "cuda", "contiguous", "clone", "view", "reshape", "flatten", "detach")
# Per jit function: (its parameter, a jit function it calls, that function's parameter it passes it to).
Passes = dict[str, list[tuple[str, str, str]]]


@dataclass(frozen=True)
class ConstexprPlan:
    """The parameters to annotate, as (function, parameter) pairs, and how the module spells triton.language."""

    params: tuple[tuple[str, str], ...]
    language: str


class ConstexprBlockSize(Rewrite):
    """## What it changes
    A parameter of a launched kernel that sizes a block (a bound of `tl.arange`, a dimension of a
    `tl.zeros` / `tl.full` shape) but is not annotated `tl.constexpr` gets the annotation:
    `BLOCK` becomes `BLOCK: tl.constexpr`, `BLOCK=1024` becomes `BLOCK: tl.constexpr = 1024`, and
    another annotation (`BLOCK: int`) is replaced. The same goes for a parameter the kernel passes to
    a `@triton.jit` helper whose own parameter sizes a block, and for that helper's parameter (a
    helper's parameter is a constexpr when its caller passes one, annotated or not). The annotation is spelled the way the module imports triton.language (`tl`
    nearly always). Every launched kernel of the module is repaired; nothing else changes, the
    launches included (a constexpr is passed positionally or by keyword like any argument).

    ## When it is valid
    The parameter is never assigned in the function (an assignment would make it a run-time value
    again: `BLOCK = BLOCK * 2` compiles to a tensor), is not listed in the jit decorator's
    `do_not_specialize`, and no launch passes it a tensor (a tensor made on the host, a name bound
    to one, or a pointer the kernel loads through). A value computed on the host at run time
    (`triton.next_power_of_2(n)`, `x.shape[1]`) is fine.

    ## Why it is faster
    It is needed, not faster: block shapes are fixed when the kernel compiles, and a plain parameter
    is a run-time value, so the kernel does not compile at all ("arange's arguments must be of type
    tl.constexpr"); Triton 3.6's interpreter rejects it too (it makes every integer argument that is
    not a constexpr a tensor). It is the commonest compile error of LLM-written first versions (48 of
    801 TritonBench files). As a constexpr the value is folded into the code: masks and strides on it
    become constants. Each distinct value compiles once (one specialization per value, cached
    afterwards), so a size that follows the input (`BLOCK=triton.next_power_of_2(n)`) compiles once
    per distinct size. Other limits then apply: an arange's size must be a power of two.

    ## Safety
    Safe: the same values, known to the compiler.

    ## Answers
    TRI028 (block-size-not-constexpr). A repair: first in the table, since the other rewrites'
    candidates compile the kernel.

    ## References
    `triton.language.constexpr` and `tl.arange` documentation; Triton's code generator passes a
    constexpr argument of a `@triton.jit` helper call as a constant, and makes a reassigned name a
    tensor (`visit_Assign`).
    """

    id = "constexpr-block-size"
    title = "Annotate the parameters that size a block `tl.constexpr`"
    codes = ("TRI028",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        tree, _ = syntax.parse_any(ctx.source)
        known = kernels(ctx.module)
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in known}
        language = triton_language(tree)
        resolve = language_resolver(language)
        passes = {name: _passes(fn, functions) for name, fn in functions.items()}
        needs = _needs_constant(functions, passes, resolve)
        sites = launch_sites(ctx.module, known)
        launched = {s.kernel for s in sites}
        pairs: dict[tuple[str, str], None] = {}
        reasons = []
        for name, fn in functions.items():
            todo = needs[name] - constexpr_params(fn, resolve)
            if not todo:
                continue
            if name not in launched:
                if not _called_by_another(name, functions):
                    reasons.append(f"{name}: not launched from any function of the module")
                continue
            found = _closure(name, todo, functions, passes, needs, resolve)
            why = next(
                (w for f, p in found if (w := _declined(known[f], functions[f], p, f == name, sites))),
                None,
            )
            if why:
                reasons.append(f"{name}: {why}")
                continue
            pairs.update(dict.fromkeys(found))
        if not pairs:
            return Precondition.no("; ".join(reasons) or "no parameter sizes a block without being tl.constexpr")
        by_function: dict[str, list[str]] = {}
        for f, p in pairs:
            by_function.setdefault(f, []).append(p)
        shown = "; ".join(f"{f} ({', '.join(ps)})" for f, ps in by_function.items())
        return Precondition.yes(
            f"annotates tl.constexpr: {shown}" + "".join(f"; not {r}" for r in reasons),
            tuple(by_function),
            ConstexprPlan(tuple(pairs), language),
        )

    def transform(self, ctx: RewriteContext, plan: ConstexprPlan) -> str:
        annotation = cst.Annotation(cst.parse_expression(f"{plan.language}.constexpr"))
        spaced = cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")
        )
        mapping = {}
        for name, kernel in kernels(ctx.module).items():
            params = kernel.node.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if (name, param.name.value) in plan.params:
                    new = param.with_changes(annotation=annotation)
                    mapping[param] = new.with_changes(equal=spaced) if param.default is not None else new
        return replace(ctx.module, mapping).code


def _passes(fn: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> list[tuple[str, str, str]]:
    """(parameter of `fn`, jit function of the module, its parameter) for each call in `fn` that passes
    one of `fn`'s parameters, as a bare name, to one of the module's `@triton.jit` functions."""
    mine = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    out = []
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        callee = functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if callee is None or callee is fn:
            continue
        theirs = [a.arg for a in callee.args.posonlyargs + callee.args.args]
        given = [*zip(theirs, call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]
        out += [(v.id, callee.name, q) for q, v in given if isinstance(v, ast.Name) and v.id in mine]
    return out


def _needs_constant(functions: dict[str, ast.FunctionDef], passes: Passes, resolve: Resolve) -> dict[str, set[str]]:
    """Per jit function, the parameters that must be compile-time values: those that size a block, and
    those it passes to a helper's parameter that must be (to a fixed point). A helper's `tl.constexpr`
    annotation alone asks nothing of its callers: a call passes constexprs by the values it gives."""
    needs = {name: set(sizing_params(fn, resolve)) for name, fn in functions.items()}
    changed = True
    while changed:
        changed = False
        for name, edges in passes.items():
            more = {p for p, callee, q in edges if q in needs[callee]} - needs[name]
            needs[name] |= more
            changed = changed or bool(more)
    return needs


def _closure(
    kernel: str,
    params: set[str],
    functions: dict[str, ast.FunctionDef],
    passes: Passes,
    needs: dict[str, set[str]],
    resolve: Resolve,
) -> list[tuple[str, str]]:
    """(function, parameter) pairs to annotate: the kernel's `params`, then each helper parameter that
    one of them reaches (passed as a bare name) where the helper needs it constant and lacks the annotation."""
    found = [(kernel, p) for p in sorted(params, key=_order(functions[kernel]))]
    for f, p in found:  # grows as it goes
        for given, callee, q in passes[f]:
            pair = (callee, q)
            if given == p and q in needs[callee] - constexpr_params(functions[callee], resolve) and pair not in found:
                found.append(pair)
    return found


def _order(fn: ast.FunctionDef) -> Callable[[str], int]:
    """A sort key putting parameters in the order `fn` declares them."""
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    return names.index


def _called_by_another(name: str, functions: dict[str, ast.FunctionDef]) -> bool:
    """Whether another jit function of the module calls `name`: a device helper, whose parameters take
    what its callers pass."""
    return any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == name
        for other, fn in functions.items()
        if other != name
        for c in ast.walk(fn)
    )


def _declined(kernel: Kernel, fn: ast.FunctionDef, param: str, launched: bool, sites: list[LaunchSite]) -> str | None:
    """Why `param` of `kernel` cannot become a constexpr, or None."""
    assigned = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == param]
    if assigned:
        return (
            f"{param} is assigned in {kernel.name} (line {assigned[0].lineno}), "
            "which would make a constexpr a run-time value again"
        )
    if param in _not_specialized(fn):
        return f"{param} is listed in {kernel.name}'s do_not_specialize"
    if not launched:
        return None
    if param in pointer_params(kernel):
        return f"{param} is a pointer the kernel loads through, not a size"
    for site in (s for s in sites if s.kernel == kernel.name):
        value = site.value(kernel, param)
        if value is not None and _tensor(site, value):
            return f"the launch in {site.host_name} passes a tensor for {param}"
    return None


def _not_specialized(fn: ast.FunctionDef) -> set[str]:
    """Parameters a `@triton.jit(do_not_specialize=[...])` decorator names (by name or position)."""
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    out = set()
    for decorator in (d for d in fn.decorator_list if isinstance(d, ast.Call)):
        for k in decorator.keywords:
            if k.arg == "do_not_specialize" and isinstance(k.value, (ast.List, ast.Tuple)):
                for e in k.value.elts:
                    if isinstance(e, ast.Constant) and isinstance(e.value, str):
                        out.add(e.value)
                    elif isinstance(e, ast.Constant) and isinstance(e.value, int) and 0 <= e.value < len(names):
                        out.add(names[e.value])
    return out


def _tensor(site: LaunchSite, value: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether a launch argument is a tensor made on the host: `torch.tensor(...)`, `x.to(...)`, a name
    the host binds only to such values, or a host parameter annotated `torch.Tensor`."""
    if isinstance(value, cst.Call):
        func = dotted(value.func) or ""
        if func.startswith("torch.") and func.rsplit(".", 1)[1].split("_like")[0] in TENSOR_MAKERS:
            return True
        return isinstance(value.func, cst.Attribute) and value.func.attr.value in TENSOR_METHODS
    if not isinstance(value, cst.Name) or depth > 4:
        return False
    params = site.host.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.name.value == value.value and p.annotation is not None:
            return (dotted(p.annotation.annotation) or "").rsplit(".", 1)[-1] == "Tensor"
    bound = [simple_assignment(s) for s in host_assignments(site.host, value.value)]
    return bool(bound) and all(t == value.value and _tensor(site, v, depth + 1) for t, v in bound)
