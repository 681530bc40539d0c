"""vectorization-hints: an aligned twin whose integer arguments the compiler can prove are multiples of VEC."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from diagnose import syntax
from diagnose.rewrite.edit import (
    guarded_launch,
    insert_after,
    rename_function,
    replace,
    statement,
    unique_name,
    with_params,
)
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, launched, sites_of
from diagnose.rewrite.source import (
    Kernel,
    calls,
    code,
    keyword,
    kernels,
    module_names,
    names,
    pointer_params,
    positional,
    simple_assignment,
    walk,
)

# Reasons of a narrow GlobalAccessWidth that a proven divisibility of the integer arguments fixes.
ALIGNMENT_REASONS = ("offset_not_divisible", "mask_bound_not_divisible")
VECTOR_BYTES = 16
TWIN = "_aligned"


@dataclass(frozen=True)
class HintPlan:
    kernel: Kernel
    site: LaunchSite
    ints: tuple[str, ...]
    tensors: tuple[str, ...]
    lines: tuple[int, ...]


class VectorizationHints(Rewrite):
    """## What it changes
    For a kernel whose global accesses the IR shows narrow for want of alignment, an aligned twin:
    its first lines rebind each integer argument that enters an address or a mask as
    `n = tl.multiple_of(n // VEC * VEC, VEC)`, a value the compiler can prove is a multiple of
    `VEC` (16 bytes of the narrowest element), and the launch chooses:
    `VEC = 16 // min(element sizes)`; `if n % VEC == 0 and ...:` the twin with `VEC=VEC`, `else:`
    the original kernel.

    ## When it is valid
    Always, thanks to the run-time check: where every such argument is a multiple of VEC,
    `n // VEC * VEC == n`, so the twin computes exactly what the kernel computes; elsewhere the
    original runs. Needed: IR evidence (GlobalAccessWidth missed with `offset_not_divisible` or
    `mask_bound_not_divisible`, or the compiler's "vectorization fails" remark) on one of the
    kernel's lines; the integer arguments and the tensors are passed as plain host expressions;
    one launch, from any function of the module, at any block depth. Hints on the raw arguments
    would do nothing (Triton ignores `tl.multiple_of` on a function argument), and a hint the launch
    does not check would be a lie on other shapes.

    ## Why it is faster
    The JIT marks an integer argument divisible only when it is a multiple of 16 elements; a row of
    300 fp32 (a multiple of 4, so 16-byte aligned rows) gets no mark, the coalescing pass gives each
    thread one element and every access is 32-bit. Proven divisibility by 4 gives 128-bit accesses
    (4x fewer memory instructions) where the block allows them.

    ## Safety
    Safe: the same values, checked at run time.

    ## Answers
    IR evidence only: GlobalAccessWidth (missed: `offset_not_divisible`, `mask_bound_not_divisible`,
    or with the compiler's "vectorization fails" remark) and that CompilerRemark. No source rule can
    tell an alignment problem: it depends on the launch's values.

    ## References
    Access width follows `tt.divisibility=16` on pointer and int arguments (set at launch from
    `data_ptr() % 16` and `value % 16`), the mask bound's divisibility, proven contiguity and the
    elements per thread, capped at 128 bits. `tl.multiple_of` on a computed value is used; on a raw
    function argument it is a no-op (`set_attr` on a FuncOp block argument in Triton's `ir.cc`).
    """

    id = "vectorization-hints"
    title = "Aligned twin: integer arguments provably multiples of VEC, checked at the launch"
    codes = ()
    evidence = ("GlobalAccessWidth", "CompilerRemark")
    backends = ("cuda", "hip")
    needs_ir = True

    def answers(self, evidence) -> bool:
        return narrowed_by_alignment(evidence)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        narrow = _narrow_lines(ctx)
        if not narrow:
            return Precondition.no(
                "the IR shows no access narrowed by alignment"
                if ctx.evidence
                else "needs IR evidence of narrow accesses (the IR level)"
            )
        spans = _kernel_spans(ctx.source)

        def plan_of(kernel: Kernel) -> HintPlan | str | None:
            start, end = spans.get(kernel.name, (0, -1))
            lines = tuple(line for line in narrow if start <= line <= end)
            return _plan(ctx, kernel, lines) if lines else None

        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            plan_of,
            HintPlan,
            lambda p: f"narrow accesses at line(s) {', '.join(map(str, p.lines))}; aligning {', '.join(p.ints)}",
            "the narrow accesses are not in a launched kernel",
        )

    def transform(self, ctx: RewriteContext, plan: HintPlan) -> str:
        taken = module_names(ctx.module)
        twin = unique_name(taken, f"{plan.kernel.name}{TWIN}")
        vec = unique_name(set(plan.kernel.params) | names(plan.kernel.node), "VEC")
        hints = [statement(f"{n} = tl.multiple_of({n} // {vec} * {vec}, {vec})") for n in plan.ints]
        hints[0] = hints[0].with_changes(
            leading_lines=[
                cst.EmptyLine(
                    comment=cst.Comment(
                        f"# the launch checked that these are multiples of {vec}: written so the compiler can prove it"
                    )
                )
            ]
        )
        node = plan.kernel.node
        body = [*hints, *node.body.body]
        twin_node = rename_function(
            with_params(node, f"{vec}: tl.constexpr").with_changes(body=node.body.with_changes(body=body)), twin
        )
        twin_node = twin_node.with_changes(
            leading_lines=[
                cst.EmptyLine(
                    comment=cst.Comment(
                        f"# {plan.kernel.name} for launches whose integer arguments are multiples of {vec} elements."
                    )
                )
            ]
        )
        module = insert_after(ctx.module, node, [twin_node])
        site = sites_of(module, plan.kernel.name)[0]
        kernel = kernels(module)[plan.kernel.name]
        host_vec = unique_name(names(site.host), "vec")
        values = [code(site.value(kernel, n)) for n in plan.ints]
        sizes = ", ".join(f"{t}.element_size()" for t in plan.tensors)
        setup = [
            f"{host_vec} = {VECTOR_BYTES} // min({sizes})"
            if len(plan.tensors) > 1
            else f"{host_vec} = {VECTOR_BYTES} // {plan.tensors[0]}.element_size()"
        ]
        condition = " and ".join(f"{v} % {host_vec} == 0" for v in values)
        switch = guarded_launch(
            site,
            twin,
            condition,
            {vec: host_vec},
            f"aligned rows: 128-bit accesses when every offset is a multiple of {host_vec}",
            setup,
        )
        return replace(module, {site.statement: switch}).code


def narrowed_by_alignment(e) -> bool:
    """A narrow access the integer arguments' divisibility would widen (by the fact's reason or remark)."""
    if e.name == "GlobalAccessWidth" and e.kind == "missed":
        return e.arg("reason") in ALIGNMENT_REASONS or (
            e.arg("reason") == "elements_per_thread" and "vectorization fails" in str(e.arg("remark") or "")
        )
    return e.name == "CompilerRemark" and "vectorization fails" in str(e.arg("message") or "")


def _narrow_lines(ctx: RewriteContext) -> list[int]:
    return sorted({e.location.line for e in ctx.evidence if e.location is not None and narrowed_by_alignment(e)})


def _kernel_spans(source: str) -> dict[str, tuple[int, int]]:
    tree = syntax.parse(source)
    return {n.name: (n.lineno, n.end_lineno or n.lineno) for n in tree.body if isinstance(n, ast.FunctionDef)}


def _plan(ctx: RewriteContext, kernel: Kernel, lines: tuple[int, ...]) -> HintPlan | str:
    if f"{kernel.name}{TWIN}" in kernels(ctx.module):
        return f"already has an aligned twin ({kernel.name}{TWIN})"
    sites = sites_of(ctx.module, kernel.name)
    if len(sites) != 1:
        return launched(sites)
    site = sites[0]
    pointers = pointer_params(kernel)
    ints = [p for p in _address_ints(kernel) if p not in pointers and p not in kernel.constexprs]
    if not ints:
        return "no integer argument enters an address or a mask"
    tensors = []
    for p in pointers:
        value = site.value(kernel, p)
        if not isinstance(value, cst.Name):
            return f"{p} is not passed as a plain tensor name"
        tensors.append(value.value)
    if not tensors:
        return "no pointer argument that a load or store reads: no tensor to size VEC by"
    for p in ints:
        value = site.value(kernel, p)
        if value is None or not isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer)):
            return f"{p} is not passed as a plain host expression"
    return HintPlan(kernel, site, tuple(ints), tuple(dict.fromkeys(tensors)), lines)


def _address_ints(kernel: Kernel) -> list[str]:
    """Kernel parameters that reach a load/store pointer or mask, through local assignments and pointer
    bumps (`x_ptr += row * stride`: the stride enters every address of `x_ptr` after it)."""
    local = {}
    for node in walk(kernel.node.body):
        target, value = simple_assignment(node)
        if target is not None:
            local.setdefault(target, set()).update(names(value))
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            local.setdefault(node.target.value, set()).update(names(node.value))
    reach: set[str] = set()
    for call in calls(kernel.node.body, "load", "store"):
        args = [a.value for a in positional(call)[:2]]
        mask = keyword(call, "mask")
        args += [mask.value] if mask is not None else []
        for arg in args:
            reach |= names(arg)
    seen: set[str] = set()
    while reach - seen:
        name = (reach - seen).pop()
        seen.add(name)
        reach |= local.get(name, set())
    return [p for p in kernel.params if p in reach]
