"""DotLowering: how each `tl.dot` was lowered, and why a faster path was not taken.

## What it reads
TTGIR: `ttng.warp_group_dot` (wgmma, MMA v3), `tt.dot` with a `#ttg.nvidia_mma<{versionMajor = 2}>`
result (mma.sync), `#ttg.amd_mfma<{version = 3, instrShape = [32, 32, 8]}>` (MFMA) or
`#ttg.amd_wmma`, and a `tt.dot` on plain `#blocked` tensors (FMA); the operand dtypes, the tile
shape and `num_warps`; the PTX/AMDGCN instructions on the same line (`wgmma.mma_async`,
`mma.sync.aligned`, `fma.rn.f32`, `v_mfma_*`) and the remark `MMA version 3 acceleration not applied`
from `tritongpu-accelerate-matmul`.

## Kinds
`passed` when the dot uses the target's best engine (wgmma on sm_90, tcgen05 on sm_100, mma.sync
on sm_80, MFMA on AMD); `missed` otherwise, with a `reason` when the rule that blocked the faster
path can be told: `fp32_ieee_precision` (`input_precision="ieee"`: no tensor-core path on NVIDIA),
`dtype` (fp64 never uses wgmma), `m_per_warpgroup_lt_64` (wgmma needs BLOCK_M / (num_warps / 4)
>= 64),
`num_warps_lt_4` (wgmma needs a whole warpgroup), or the compiler remark's text.
"""

from __future__ import annotations

import re
from collections import Counter

from diagnose.ir.facts.context import FactContext, TensorType, tensor_type
from diagnose.records import Evidence

NAME = "DotLowering"
DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "ttng.tc_gen5_mma", "tt.dot_scaled", "ttng.tc_gen5_mma_scaled")
# #mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>
MMA_DEF = re.compile(r"^(#\w+) = #ttg\.(?P<kind>nvidia_mma|amd_mfma|amd_wmma)<\{(?P<body>.*)\}>")
# v_mfma_f32_32x32x8_f16 / wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 / mma.sync.aligned.m16n8k16
ASM_DOT = re.compile(
    r"\b(wgmma\.mma_async|mma\.sync\.aligned|tcgen05\.mma|v_mfma_\w+|v_wmma_\w+|fma\.rn\.f32|v_fma\w*|v_pk_fma\w*)"
)
PRECISIONS = {"0": "tf32", "1": "tf32x3", "2": "ieee"}  # InputPrecision enum as printed on ttng ops
BEST = {"cuda": {80: "mma_v2", 90: "wgmma", 100: "tcgen05"}, "hip": "mfma"}


def dot_lowering(ctx: FactContext) -> list[Evidence]:
    layouts = {}
    for line in ctx.text("ttgir").splitlines():
        if m := MMA_DEF.match(line):
            layouts[m[1]] = (m["kind"], m["body"])
    asm_counts: dict[int, Counter] = {}
    for line in ctx.asm_lines:
        if line.location and (m := ASM_DOT.search(line.text)):
            key = m[1].split("_")[0] if m[1].startswith("v_fma") else m[1]
            asm_counts.setdefault(line.location.line, Counter())[key] += 1
    out, seen = [], set()
    for op in ctx.ops("ttgir"):
        if op.name not in DOT_OPS or op.location is None or op.location.line in seen:
            continue
        seen.add(op.location.line)
        out.append(_evidence(ctx, op, layouts, asm_counts.get(op.location.line, Counter())))
    return out


def _engine(op, layouts) -> tuple[str, dict]:
    if op.name == "ttng.warp_group_dot":
        kind, body = layouts.get(_result_layout(op), ("nvidia_mma", ""))
        return "wgmma", _layout_args(body)
    if op.name.startswith("ttng.tc_gen5"):
        return "tcgen05", {}
    kind, body = layouts.get(_result_layout(op), (None, ""))
    if kind == "nvidia_mma":
        version = re.search(r"versionMajor = (\d)", body)
        return ("wgmma" if version and version[1] == "3" else "mma_v2"), _layout_args(body)
    if kind == "amd_mfma":
        return "mfma", _layout_args(body)
    if kind == "amd_wmma":
        return "wmma", _layout_args(body)
    return "fma", {}


def _operand_type(raw: str):
    """The A operand's type: a tensor (`tt.dot`) or a shared-memory descriptor (`warp_group_dot`)."""
    m = re.search(r":\s*(?:!ttg\.memdesc<|tensor<)((?:\d+x)+)(\w+)", raw)
    if not m:
        return None

    return TensorType(tuple(int(d) for d in m[1].rstrip("x").split("x")), m[2], None)


def _result_layout(op) -> str | None:
    m = re.search(r"->\s*tensor<[^,]+,\s*(#\w+)", op.raw)
    return m[1] if m else None


def _layout_args(body: str) -> dict:
    out = {}
    for key in ("versionMajor", "version", "instrShape", "warpsPerCTA"):
        if m := re.search(rf"\b{key} = (\[[\d, ]+\]|\d+)", body):
            out[key] = m[1]
    return out


def _evidence(ctx: FactContext, op, layouts, asm: Counter) -> Evidence:
    engine, layout_args = _engine(op, layouts)
    a = _operand_type(op.raw)
    result = re.search(r"->\s*(tensor<[^>]*>)", op.raw)
    c = tensor_type(result[1]) if result else None
    num_warps = ctx.record.metadata.get("num_warps")
    precision = re.search(r"inputPrecision = (\w+)", op.raw)
    precision = PRECISIONS.get(precision[1], precision[1]) if precision else None
    args = {
        "engine": engine,
        "a_dtype": a.elem if a else None,
        "acc_dtype": c.elem if c else None,
        "tile": "x".join(map(str, c.shape)) if c else None,
        "k": a.shape[-1] if a else None,
        "num_warps": num_warps,
        "input_precision": precision,
        **{("mma_" + k): v for k, v in layout_args.items()},
        "asm": ", ".join(f"{k} x{n}" for k, n in asm.most_common()) or None,
    }
    best = BEST["hip"] if ctx.target.is_amd else BEST["cuda"].get(ctx.target.arch)
    kind = "passed" if engine == best else "missed"
    if kind == "missed":
        args["best"] = best
        args["reason"] = _reason(ctx, op, engine, a, c, num_warps, precision)
    return ctx.evidence(NAME, kind, "ttgir", op.location, args, op.raw)


def _reason(ctx, op, engine, a, c, num_warps, precision) -> str:
    remark = next((d for d in ctx.diagnostics if d.line == op.location.line and "MMA" in d.message), None)
    if a and a.elem == "f32" and engine == "fma" and precision in (None, "ieee") and ctx.target.is_nvidia:
        return "fp32_ieee_precision"  # tf32 would have reached the tensor cores
    if a and a.elem in ("f64",):
        return "dtype"
    if engine == "mma_v2" and ctx.target.arch == 90:
        if num_warps and num_warps < 4:
            return "num_warps_lt_4"
        if c and num_warps and c.shape[0] // max(1, num_warps // 4) < 64:
            return "m_per_warpgroup_lt_64"
    return remark.message if remark else "unknown"
