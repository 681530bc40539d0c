"""dot-input-precision: an fp32 `tl.dot` pinned to IEEE fp32 runs on the tensor cores (tf32, or bf16)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import drop_keyword, expression, replace, set_keyword
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext, missed
from diagnose.rewrite.source import calls, code, keyword, kernels

PRECISIONS = ("tf32", "bf16")


@dataclass(frozen=True)
class PrecisionPlan:
    dots: tuple[cst.Call, ...]
    kernels: tuple[str, ...]


class DotInputPrecision(Rewrite):
    """## What it changes
    `tl.dot(a, b, input_precision="ieee")` or `tl.dot(a, b, allow_tf32=False)` becomes
    `tl.dot(a, b, input_precision="tf32")`; with the parameter `precision="bf16"`, the operands are
    cast instead, `tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))`. The accumulator stays fp32.

    ## When it is valid
    Whenever the tolerance of the task allows it: tf32 keeps fp32's range with a 10-bit mantissa
    (relative error ~1e-3 per product), bf16 an 7-bit one. The harness decides: a candidate whose
    outputs leave the dtype's tolerance fails verification. The interpreter on CPU computes dots
    in fp32 whatever the precision, so only a device run checks the numerics.

    ## Why it is faster
    IEEE fp32 has no tensor-core path on NVIDIA: the dot becomes FMA loops (`fma.rn.f32`) at
    ~1/16 of the tf32 rate; tf32 lowers to wgmma on sm_90 and mma.sync on sm_80, bf16 to twice that.

    ## Safety
    Unsafe: numerics change (lower-precision products).

    ## Answers
    TRI004 (ieee-fp32-dot); IR evidence DotLowering (missed, `fp32_ieee_precision`).

    ## References
    Triton `tl.dot` documentation (`input_precision`).
    """

    id = "dot-input-precision"
    title = "Run an IEEE-fp32 tl.dot on the tensor cores (tf32, or bf16 operands)"
    safety = "unsafe"
    codes = ("TRI004",)
    evidence = ("DotLowering",)
    backends = ("cuda", "hip")

    def answers(self, evidence) -> bool:
        return missed(evidence, "DotLowering", "fp32_ieee_precision")

    def precondition(self, ctx: RewriteContext) -> Precondition:
        dots, where = [], []
        for kernel in kernels(ctx.module).values():
            mine = [d for d in calls(kernel.node.body, "dot") if _pinned(d)]
            if mine:
                dots += mine
                where.append(kernel.name)
        if not dots:
            return Precondition.no('no tl.dot with input_precision="ieee" or allow_tf32=False')
        precision = ctx.param("precision", "tf32")
        if precision not in PRECISIONS:
            return Precondition.no(f"unknown precision {precision!r}; choose {' or '.join(PRECISIONS)}")
        return Precondition.yes(
            f"{len(dots)} tl.dot pinned to IEEE fp32", tuple(where), PrecisionPlan(tuple(dots), tuple(where))
        )

    def transform(self, ctx: RewriteContext, plan: PrecisionPlan) -> str:
        precision = ctx.param("precision", "tf32")
        mapping = {}
        for dot in plan.dots:
            new = drop_keyword(drop_keyword(dot, "allow_tf32"), "input_precision")
            if precision == "tf32":
                new = set_keyword(new, "input_precision", expression('"tf32"'))
            else:
                args = list(new.args)
                for i in (0, 1):
                    args[i] = args[i].with_changes(
                        value=expression(f"({code(args[i].value)}).to(tl.bfloat16)")
                        if not isinstance(args[i].value, cst.Name)
                        else expression(f"{args[i].value.value}.to(tl.bfloat16)")
                    )
                new = new.with_changes(args=args)
            mapping[dot] = new
        return replace(ctx.module, mapping).code


def _pinned(dot: cst.Call) -> bool:
    precision = keyword(dot, "input_precision")
    tf32 = keyword(dot, "allow_tf32")
    return (
        precision is not None
        and isinstance(precision.value, cst.SimpleString)
        and precision.value.evaluated_value == "ieee"
    ) or (tf32 is not None and isinstance(tf32.value, cst.Name) and tf32.value.value == "False")
