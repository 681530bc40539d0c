"""elementwise-max: `tl.max(x, 0.0)` and `tl.min(x, 127.0)`, written for an elementwise maximum or minimum,
become `tl.maximum` and `tl.minimum`."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose import syntax
from diagnose.extrema import elementwise_name
from diagnose.rewrite.edit import replace
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import code, kernels, language_resolver, triton_language, walk


@dataclass(frozen=True)
class ElementwisePlan:
    """The calls to rename, each with its new function name (`maximum` / `minimum`)."""

    calls: tuple[tuple[cst.Call, str], ...]


class ElementwiseMax(Rewrite):
    """## What it changes
    Every `tl.max` / `tl.min` call in a `@triton.jit` function of the module that is written with two
    values (`diagnose.extrema`: two positional arguments, no keyword, and a number first or a float
    second) becomes `tl.maximum` / `tl.minimum` with the same arguments in the same order:
    `tl.max(x, 0.0)` becomes `tl.maximum(x, 0.0)`, `tl.max(0, x)` becomes `tl.maximum(0, x)`,
    `tl.min(tl.max(x, 0.0), 127.0)` becomes `tl.minimum(tl.maximum(x, 0.0), 127.0)`. The function keeps
    the module's spelling of triton.language (`tl`, `triton.language`, another alias); nothing else
    changes.

    ## When it is valid
    Whenever such a call is there: a reduction of a number, or over a float axis, has no meaning, so the
    elementwise maximum is the only reading. `tl.max(x, 0)`, `tl.max(x, axis=1)` and `tl.max(x, AXIS)`
    are reductions and are left alone.

    ## Why it is faster
    It is needed, not faster: `tl.max(input, axis=None, ...)` is a reduction whose second positional
    argument is the axis, so `tl.max(x, 0.0)` and `tl.max(0, x)` do not compile on Triton 3.6, and the
    interpreter rejects them too ("'float' object cannot be interpreted as an integer", "'int' object has
    no attribute 'type'"). LLM-written first versions write it for a ReLU or a clamp (13 of 801
    TritonBench files).

    ## Safety
    Safe: `tl.maximum` and `tl.minimum` compute what the call was written to compute.

    ## Answers
    TRI031 (reduction-as-elementwise). A repair: early in the table, since the other rewrites'
    candidates compile the kernel.

    ## References
    `triton.language.max`, `triton.language.maximum` and `triton.language.minimum` documentation.
    """

    id = "elementwise-max"
    title = "Call `tl.maximum` / `tl.minimum` where `tl.max` / `tl.min` is written with two values"
    codes = ("TRI031",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        tree, _ = syntax.parse_any(ctx.source)
        resolve = language_resolver(triton_language(tree))
        found: dict[str, list[tuple[cst.Call, str]]] = {}
        for name, kernel in kernels(ctx.module).items():
            for call in (n for n in walk(kernel.node) if _max_or_min(n)):
                # The call alone, read by Python's parser: the one reading TRI031 has too.
                elementwise = elementwise_name(syntax.parse(code(call), mode="eval").body, resolve)
                if elementwise:
                    found.setdefault(name, []).append((call, elementwise))
        if not found:
            return Precondition.no("no tl.max/tl.min called with two values")
        shown = "; ".join(f"{name} ({len(calls)})" for name, calls in found.items())
        plan = ElementwisePlan(tuple(c for calls in found.values() for c in calls))
        return Precondition.yes(f"calls tl.maximum/tl.minimum in {shown}", tuple(found), plan)

    def transform(self, ctx: RewriteContext, plan: ElementwisePlan) -> str:
        # A function of the node with its arguments already rewritten: a call may hold another.
        mapping = {
            call: lambda new, elementwise=elementwise: new.with_changes(
                func=new.func.with_changes(attr=cst.Name(elementwise))
            )
            for call, elementwise in plan.calls
        }
        return replace(ctx.module, mapping).code


def _max_or_min(node: cst.CSTNode) -> bool:
    """A call of some `<name>.max` / `<name>.min`: the only calls worth reading further."""
    return (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("max", "min")
    )
