"""add-autotune: `@triton.autotune` over block sizes, warps and stages, keyed on the problem's sizes."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from typing import Any

import libcst as cst

from diagnose import syntax
from diagnose.rewrite.codemods import attention_tiles, retune_launch, wgmma_tiles
from diagnose.rewrite.edit import drop_arguments, insert_before, replace, statements, unique_name
from diagnose.rewrite.launch_values import host_binding, slots
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, resolve_grid, sites_of
from diagnose.rewrite.source import Kernel, calls, code, kernels, module_names, names, pointer_params, walk

MAX_CONFIGS = 6
BENCH = '''
def {name}(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)
'''


@dataclass(frozen=True)
class AutotunePlan:
    kernel: Kernel
    site: LaunchSite
    tuned: tuple[str, ...]  # the constexprs the configs set
    options: tuple[str, ...]  # num_warps / num_stages the configs set
    key: tuple[str, ...]
    space: tuple[dict, ...]


class AddAutotune(Rewrite):
    """## What it changes
    The kernel gets `@triton.autotune(configs=[triton.Config({...}, num_warps=..., num_stages=...)],
    key=[sizes])`: the configs are the launch-config search's survivors (IR-pruned, best estimate
    first), the key the integer arguments that bound masks and loops (the problem's sizes, so a new
    shape is tuned again, strides excluded). The launch stops passing the tuned constexprs and
    options, by keyword or by position (a positional argument after a dropped one is then passed by
    keyword; inference libraries pass `BLOCK_M, BLOCK_N` last, by position), and its grid becomes `lambda meta: ...` with each tuned host name read from `meta`, and
    each literal block the grid repeats (`triton.cdiv(n, 256)` beside `BLOCK_SIZE=256`) too.
    A small `do_bench` helper, added right above the kernel, uses Triton's benchmarker on a device
    and just runs each config once in the interpreter, where nothing can be timed.

    ## When it is valid
    As for `retune-launch` / `wgmma-tiles` / `attention-tiles` (the last for a kernel of two chained
    dots that `wgmma-tiles` does not take; for `retune-launch`, every access whose pointer depends on
    the block size masked, accesses independent of it such as a reduction's per-row store needing
    none; for `wgmma-tiles`, every access masked: so every config computes the same result; the
    tuned values set once on the host), plus: the kernel has no atomics (autotuning
    runs it several times on the same outputs) and is not autotuned yet; it is made a kernel by its
    own `@triton.jit` (not by an assignment after it, `f = triton.jit(f)`, where the new decorator would
    sit under the jit); the grid is a tuple (whose literal blocks name the tuned values: see
    `launch_values.grid_literal`), a name bound to one where it reaches the launch, or a `lambda meta:` (kept, its
    tuned host names read from its own parameter); the tuned host names are used only by the grid and
    the launch. The
    launch may sit in any function of the module (a module-level `def op(x)`, an autograd
    `Function.forward`, `ModelNew.forward`), at any block depth.

    ## Why it is faster
    The best block size depends on the shape and the device; autotuning measures the candidates on
    the real device for every new key instead of trusting one static choice.

    ## Safety
    Safe: every config computes the same values (block sizes change only the reduction order). A
    buffer the kernel both reads and writes (an in-place update, lightllm's `add_in_place`; an
    accumulating output) is named in `restore_value`, so that the autotuner's trial runs leave it as
    they found it (without it the update ran once per config: the verifier caught it as input
    mutation).

    ## Answers
    TRI001, TRI005, TRI006 (like the retunes), TRI024 (autotune-empty-key) by construction; the
    profiling codes PRF001 (memory-bound short of the roof), PRF003 (latency-bound) and PRF005
    (launch-bound), like `retune-launch`.

    ## References
    Triton `triton.autotune`.
    """

    id = "add-autotune"
    title = "Add @triton.autotune over the launch-config search's survivors, keyed on the sizes"
    codes = ("TRI001", "TRI005", "TRI006", "TRI024", "PRF001", "PRF003", "PRF005")
    conflicts = ("retune-launch", "wgmma-tiles")
    tunable = True

    def precondition(self, ctx: RewriteContext) -> Precondition:
        return Precondition.first_kernel(
            kernels(ctx.module).values(),
            lambda k: _plan(ctx, k),
            AutotunePlan,
            lambda p: f"tune {', '.join(p.tuned + p.options)} keyed on {', '.join(p.key)}",
            "no launched kernel with block sizes to tune",
        )

    def search_space(self, ctx: RewriteContext, plan: AutotunePlan) -> list[dict[str, Any]]:
        return list(plan.space)

    def transform(self, ctx: RewriteContext, plan: AutotunePlan) -> str:
        configs = ctx.param("configs")
        if configs is None:
            # one configuration of the search (its trial compiles and is ranked alone), or the space's first
            single = {k: v for k, v in ctx.params if k in (*plan.tuned, *plan.options)}
            configs = [single] if single else list(plan.space[:MAX_CONFIGS])
        taken = module_names(ctx.module)
        bench = unique_name(taken, "_autotune_bench")
        lines = []
        for values in configs:
            constexprs = ", ".join(f'"{k}": {int(v)}' for k, v in values.items() if k in plan.tuned)
            options = "".join(f", {k}={int(v)}" for k, v in values.items() if k in ("num_warps", "num_stages"))
            lines.append(f"triton.Config({{{constexprs}}}{options})")
        key = ", ".join(f'"{k}"' for k in plan.key)
        restore = ", ".join(f'"{p}"' for p in updated_in_place(plan.kernel))
        restored = f"    restore_value=[{restore}],\n" if restore else ""
        decorator = cst.Decorator(
            cst.parse_expression(
                "triton.autotune(\n    configs=[\n"
                + "".join(f"        {line},\n" for line in lines)
                + f"    ],\n    key=[{key}],\n{restored}    do_bench={bench},\n)"
            )
        )
        node = plan.kernel.node
        new_kernel = node.with_changes(decorators=[decorator, *node.decorators])
        grid, grid_statement = resolve_grid(plan.site)
        found = slots(plan.kernel, plan.site, plan.tuned)
        host_names = {s.host_name: p for p, s in found.items() if s.kind == "host"}
        # a literal grid's blocks (`triton.cdiv(M, 64)` beside `BLOCK_M=64`) become the config's too
        literals = {id(s.grid_literal): p for p, s in found.items() if s.grid_literal is not None}
        if isinstance(grid, cst.Lambda) and len(grid.params.params) == 1:
            # already a grid of the launch's meta-parameters (unsloth's `lambda meta: (cdiv(n,
            # meta["BLOCK_SIZE"]),)`): the autotuner fills them; tuned host names read from them too
            meta = grid.params.params[0].name.value
            body = _meta_grid(grid.body, host_names, literals, meta)
            lambda_grid = grid.with_changes(body=cst.parse_expression(body))
        else:
            meta = unique_name(names(plan.site.host), "meta")
            lambda_grid = cst.parse_expression(f"lambda {meta}: {_meta_grid(grid, host_names, literals, meta)}")
        call = drop_arguments(plan.site.call, list(plan.kernel.params), (*plan.tuned, *plan.options))
        mapping: dict = {node: new_kernel}
        if grid_statement is not None:
            mapping[grid] = lambda_grid
            mapping[plan.site.call] = call
        else:
            mapping[plan.site.call] = call.with_changes(
                func=call.func.with_changes(slice=[cst.SubscriptElement(cst.Index(lambda_grid))])
            )
        for host in host_names:  # `BLOCK_SIZE = 128` is now the autotuner's business
            binding = host_binding(plan.site.host, host)
            if binding is not None and isinstance(binding.statement.body[0].targets[0].target, cst.Name):
                mapping[binding.statement] = cst.RemoveFromParent()
        module = replace(ctx.module, mapping)
        # the decorator reads the helper when the kernel is defined: it goes right above the kernel
        anchor = next(n for n in module.body if isinstance(n, cst.FunctionDef) and n.name.value == plan.kernel.name)
        return insert_before(module, anchor, statements(BENCH.format(name=bench))).code


def _meta_grid(grid: cst.BaseExpression, host_names: dict[str, str], literals: dict[int, str], meta: str) -> str:
    """The grid with each tuned host name, and each literal block (by node identity), read from `meta`."""

    class Sub(cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node):
            param = host_names.get(updated_node.value)
            return cst.parse_expression(f'{meta}["{param}"]') if param else updated_node

        def leave_Integer(self, original_node, updated_node):
            param = literals.get(id(original_node))
            return cst.parse_expression(f'{meta}["{param}"]') if param else updated_node

    return code(grid.visit(Sub()))


def updated_in_place(kernel: Kernel) -> list[str]:
    """Pointer parameters the kernel both loads from and stores to (`x += alpha * y` in place, an
    accumulating output): the autotuner runs every config on the same buffers, so it must put their
    values back between runs (`restore_value`), or the kernel updates them once per config."""
    stored = set(pointer_params(kernel, "store"))
    return [p for p in pointer_params(kernel, "load") if p in stored]


def size_arguments(kernel: Kernel) -> list[str]:
    """Integer arguments that bound a mask comparison or a loop: the problem's sizes."""
    pointers = set(pointer_params(kernel))
    found = set()
    for node in walk(kernel.node.body):
        if isinstance(node, cst.Comparison):
            for c in node.comparisons:
                found |= names(c.comparator)
        if isinstance(node, cst.For) and isinstance(node.iter, cst.Call):
            found |= names(node.iter)
    return [p for p in kernel.params if p in found and p not in pointers and p not in kernel.constexprs]


def _plan(ctx: RewriteContext, kernel: Kernel) -> AutotunePlan | str | None:
    if not sites_of(ctx.module, kernel.name):
        return None
    if kernel.autotuned:
        return "already autotuned"
    if kernel.jit_by_assignment:
        return "made a kernel by assignment (`f = triton.jit(f)`): a decorator would sit under triton.jit"
    if calls(kernel.node.body, *[f"atomic_{op}" for op in ("add", "max", "min", "and", "or", "xor", "xchg", "cas")]):
        return "has atomics (autotuning reruns it on the same outputs)"
    if "triton" not in module_names(ctx.module):
        return "the module does not import triton"
    if calls(kernel.node.body, "dot"):
        base = wgmma_tiles.WgmmaTiles()
        pre = base.precondition(ctx)
        if not (pre.holds and pre.kernels == (kernel.name,)):
            attention = attention_tiles.AttentionTiles()  # two chained dots: its query/key tiles instead
            if (found := attention.precondition(ctx)).holds and found.kernels == (kernel.name,):
                base, pre = attention, found
    else:
        base = retune_launch.RetuneLaunch()
        pre = base.precondition(ctx)
    if not pre.holds or pre.kernels != (kernel.name,):
        return pre.reason if not pre.holds else None
    space = base.search_space(ctx, pre.plan)
    tuned = tuple(k for k in space[0] if k not in ("num_warps", "num_stages"))
    options = tuple(k for k in space[0] if k in ("num_warps", "num_stages"))
    site = sites_of(ctx.module, kernel.name)[0]
    found = slots(kernel, site, tuned)
    if isinstance(found, str):
        return found
    grid, _ = resolve_grid(site)
    reads = _reads(code(site.host))
    for slot in found.values():
        if slot.kind == "host":
            # read by the launch and the grid only: nothing else may depend on the tuned value
            if reads.get(slot.host_name, 0) - _reads(code(grid)).get(slot.host_name, 0) > 1:
                return f"{slot.host_name} is used beyond the grid and the launch"
    if drop_arguments(site.call, list(kernel.params), (*tuned, *options)) is None:
        return "an unpacked argument (`*args`) hides which position binds the tuned values"
    key = size_arguments(kernel)
    if not key:
        return "no size argument to key the tuning on"
    return AutotunePlan(kernel, site, tuned, options, tuple(key), tuple(space))


def _reads(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(syntax.parse(textwrap.dedent(text).strip())):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out[n.id] = out.get(n.id, 0) + 1
    return out
