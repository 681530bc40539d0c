from __future__ import annotations

import ast
import math
from typing import Optional

from diagnose.blocks import arange_bounds
from diagnose.triage.context import Context, Variant
from diagnose.triage.kernel import TL, Kernel
from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import arange_sizes, keyword, pointer_of, value_of

ELEMENT_BYTES = 4  # blocks are computed in fp32 (loads are upcast); the usual case
Shape = Optional[tuple]  # () a scalar, (d0, d1, ...) a block (a dim may be None: unknown), None unknown
AXIS_REDUCTIONS = {TL + n for n in ("sum", "max", "min", "reduce", "argmax", "argmin", "xor_sum")}
SAME_SHAPE = {TL + n for n in ("cumsum", "cumprod", "sort", "flip", "associative_scan")}
SCALARS = {TL + n for n in ("program_id", "num_programs", "cdiv")}


class Shapes:
    """Block shapes of expressions in one kernel, for one variant's constexpr values."""

    def __init__(self, ctx: Context, kernel: Kernel, variant: Variant):
        self.ctx, self.kernel, self.variant = ctx, kernel, variant
        self.memo: dict[str, Shape] = {}

    def of(self, node: ast.AST) -> Shape:
        if isinstance(node, ast.Constant):
            return ()
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, (ast.BinOp,)):
            return broadcast([self.of(node.left), self.of(node.right)])
        if isinstance(node, ast.Compare):
            return broadcast([self.of(node.left), *map(self.of, node.comparators)])
        if isinstance(node, ast.BoolOp):
            return broadcast(list(map(self.of, node.values)))
        if isinstance(node, ast.UnaryOp):
            return self.of(node.operand)
        if isinstance(node, ast.IfExp):
            return broadcast([self.of(node.body), self.of(node.orelse)])
        if isinstance(node, ast.Attribute):
            if node.attr == "T":
                s = self.of(node.value)
                return None if s is None else tuple(reversed(s))
            return ()
        return None

    def _name(self, name: str) -> Shape:
        if name in self.memo:
            return self.memo[name]
        values = self.kernel.assigns.get(name, ())
        if name in self.kernel.params or not values:
            return ()
        self.memo[name] = ()  # cycles (x = x + 1) contribute nothing
        shapes = [self.of(v) for v in values if not isinstance(self.kernel.parent.get(v), ast.For)] or [()]
        known = [s for s in shapes if s is not None]
        best = max(known, key=len) if known else None
        if best is not None and any(s is None for s in shapes) and best == ():
            best = None
        self.memo[name] = best
        return best

    def _int(self, node: ast.AST | None) -> int | None:
        return value_of(node, self.ctx, self.variant)

    def _dims(self, node: ast.AST | None) -> Shape:
        if isinstance(node, (ast.List, ast.Tuple)):
            return tuple(self._int(e) for e in node.elts)
        v = self._int(node)
        return (v,) if v is not None else None

    def _call(self, call: ast.Call) -> Shape:
        name = self.kernel.qualname(call.func) or ""
        args = call.args
        if name == TL + "arange":
            start, end = arange_bounds(call)
            a, b = self._int(start), self._int(end)
            return (b - a,) if a is not None and b is not None else (None,)
        if name in (TL + "zeros", TL + "full", TL + "rand", TL + "randn"):
            return self._dims(args[0] if args else keyword(call, "shape"))
        if name in (TL + "zeros_like", TL + "full_like"):
            return self.of(args[0]) if args else None
        if name in (TL + "load", TL + "advance", TL + "multiple_of", TL + "max_contiguous") or name in SAME_SHAPE:
            target = pointer_of(call) if name == TL + "load" else (args[0] if args else None)
            return self.of(target) if target is not None else None
        if name == TL + "make_block_ptr":
            return self._dims(keyword(call, "block_shape", 4))
        if name in (TL + "reshape", TL + "view", TL + "broadcast_to"):
            shape = keyword(call, "shape", 1)
            if shape is not None and len(args) > 2:  # reshape(x, d0, d1)
                return tuple(self._int(a) for a in args[1:])
            return self._dims(shape)
        if name in AXIS_REDUCTIONS:
            s = self.of(args[0]) if args else None
            axis = keyword(call, "axis", 1)
            if s is None or axis is None or isinstance(axis, ast.Constant) and axis.value is None:
                return ()
            a = self._int(axis)
            if a is None or not s:
                return None
            a = a % len(s)
            keep = keyword(call, "keep_dims")
            if isinstance(keep, ast.Constant) and keep.value:
                return s[:a] + (1,) + s[a + 1 :]
            return s[:a] + s[a + 1 :]
        if name == TL + "dot":
            a, b = (self.of(args[0]), self.of(args[1])) if len(args) > 1 else (None, None)
            return (a[-2], b[-1]) if a and b and len(a) >= 2 and len(b) >= 2 else None
        if name in (TL + "trans", TL + "permute"):
            s = self.of(args[0]) if args else None
            return None if s is None else tuple(reversed(s))
        if name == TL + "expand_dims":
            s, a = (self.of(args[0]) if args else None), self._int(keyword(call, "axis", 1))
            if s is None or a is None:
                return None
            a = a % (len(s) + 1)
            return s[:a] + (1,) + s[a:]
        if name in SCALARS:
            return ()
        parts = list(args) + [k.value for k in call.keywords]
        if isinstance(call.func, ast.Attribute) and not name.startswith("triton."):
            parts.append(call.func.value)  # x.to(...): x's shape
        return broadcast([self.of(p) for p in parts])

    def _subscript(self, node: ast.Subscript) -> Shape:
        s = self.of(node.value)
        if s is None:
            return None
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out, dims = [], list(s)
        for e in elts:
            if isinstance(e, ast.Constant) and e.value is None:
                out.append(1)
            elif isinstance(e, ast.Slice):
                if not dims:
                    return None
                out.append(dims.pop(0))
            elif dims:
                dims.pop(0)  # an integer index drops the axis
        return tuple(out + dims)


def broadcast(shapes: list[Shape]) -> Shape:
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = [d for d in dims if d is not None and d != 1]
        if any(d is None for d in dims):
            out.append(max(known) if known else None)
        else:
            out.append(max(known) if known else 1)
    return tuple(out)


def elements(shape: Shape) -> int | None:
    if shape is None or any(d is None for d in shape):
        return None
    return math.prod(shape)


def live_estimate(
    ctx: Context, kernel: Kernel, variant: Variant, multibuffer: int
) -> tuple[int, int, int, bool] | None:
    """(bytes, live tiles, largest tile, in a loop) for the most loaded region of the kernel: a loop body (its
    block loads double-buffered by multibuffer, plus the blocks loaded before it and still live, plus
    the blocks it carries: accumulators) or the straight-line body. Scalar loads do not count, and
    loads in sibling loops are not live at the same time."""
    shapes = Shapes(ctx, kernel, variant)
    loads: list[tuple[ast.Call, int, ast.AST | None]] = []
    for call in kernel.calls("load"):
        ptr = pointer_of(call)
        n = elements(shapes.of(ptr)) if ptr is not None else None
        if n is not None and n > 1:
            loads.append((call, n, kernel.enclosing_loop(call)))
    if not loads:
        return None
    best = None
    regions = [None] + kernel.loops
    for region in regions:
        own = [n for _, n, r in loads if r is region]
        if not own:
            continue
        outer = [n for c, n, r in loads if r is not region and _encloses(kernel, r, region)]
        carried = _carried(kernel, shapes, region) if region is not None else []
        mb = multibuffer if region is not None else 1
        tiles = own + outer + carried  # results can reuse a dead input's buffer: not counted
        total = (sum(own) * mb + sum(outer) + sum(carried)) * ELEMENT_BYTES
        if best is None or total > best[0]:
            best = (total, len(tiles), max(own + outer + carried), region is not None)
    return best


def _calls_dot_helper(ctx: Context, kernel: Kernel) -> bool:
    """A cube kernel whose `tl.dot` lives in a `@triton.jit` helper (flash attention's inner loop)."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ctx.kernels
        and ctx.kernels[n.func.id].has_dot
        for n in ast.walk(kernel.node)
    )


def _encloses(kernel: Kernel, outer, inner) -> bool:
    """`outer` (a loop, or None for the kernel body) contains `inner`."""
    if outer is None:
        return True
    if inner is None:
        return False
    return any(a is outer for a in kernel.ancestors(inner))


def _carried(kernel: Kernel, shapes: Shapes, loop: ast.AST) -> list[int]:
    """Blocks created before `loop` and updated in it (accumulators): live through every iteration."""
    inside = {id(n) for n in ast.walk(loop)}
    makers = {TL + n for n in ("zeros", "full", "zeros_like", "full_like")}
    out = []
    for name, values in kernel.assigns.items():
        before = [
            v
            for v in values
            if id(v) not in inside
            and v.lineno < loop.lineno
            and isinstance(v, ast.Call)
            and kernel.qualname(v.func) in makers
        ]
        if not before or not any(id(v) in inside for v in values):
            continue
        n = elements(shapes.of(before[-1]))
        if n is not None and n > 1:
            out.append(n)
    return out


class UbOverflow(Rule):
    """## What it finds
    A vector kernel whose live blocks cannot fit the unified buffer (UB): for each loop body (and the
    straight-line body), the block loads in it at their own tile shapes, times 2 for multibuffer
    inside loops on 910B (on by default; off on 950), plus the blocks loaded before it and the
    accumulators it carries, at 4 B per element, above 192 KB (A2/A3) or 248 KB (950).

    ## Why it is slow
    It fails to compile: `ub overflow, requires N bits while 1572864 bits available`. Even near the
    limit, multibuffering (double-buffered DMA) is disabled and loads no longer overlap compute. Tile
    in two levels instead: BLOCK per core, BLOCK_SUB per in-core loop step. The estimate ignores
    masks and temporaries and assumes 4-byte elements, so it is a warning, not an error: the
    compiler's own allocation decides.

    ## Example
    ```python
    offs = pid * BLOCK + tl.arange(0, BLOCK)          # BLOCK = 65536, 2 loads: ~1 MB
    ```

    ## Use instead
    ```python
    for sub in range(0, BLOCK, BLOCK_SUB):           # BLOCK_SUB = 8192: 192 KB with multibuffer
        offs = pid * BLOCK + sub + tl.arange(0, BLOCK_SUB)
    ```

    ## Known false positives
    Measured on 25 of the 32 findings of Liger-Kernel, FlagGems, TritonBench and the Triton
    tutorials (3 true, 19 false, 3 debatable before this section; severity was error, and the false
    ones include Liger's and FlagGems' Ascend backends, which compile). Now accepted:
    - scalar loads (a row's label, an LSE, a coefficient) counted as tiles;
    - loads in separate loops (a two-pass norm or softmax) counted as live at once;
    - a 2-D tile estimated as the largest `tl.arange` squared (BLOCK_N x BLOCK_N for an 8 x 256
      tile, a loop count taken for an axis);
    - kernels whose `tl.dot` lives in a `@triton.jit` helper (flash attention's inner loop);
    - a result counted as a tile of its own: elementwise results reuse a dead input's buffer.
    Still misread: element size is assumed 4 B (fp16 inputs use half, int64 temporaries double),
    and tile sizes that come from host code the evaluator cannot follow are not counted at all.

    ## Targets
    ascend.

    ## References
    triton-ascend programming guide, "Tiling Optimization" (UB capacity, BLOCK and BLOCK_SUB);
    mindspore-ai/akg hardware sheets (UB 192 KB on A2/A3, 248 KB on 950).
    """

    code = "ASC003"
    name = "ub-overflow"
    message = (
        "~{kb} KB of live blocks ({live} tiles, the largest {elements} elements, 4 B each{mb}) exceeds "
        "the {ub} KB unified buffer"
    )
    fix_title = "Tile with a smaller in-core BLOCK_SUB loop"
    severity = "warning"
    targets = ("ascend",)

    def check(self, ctx):
        ub = ctx.target.shared_per_block
        multibuffer = 1 if ctx.target.short_arch.startswith("950") else 2
        for kernel in ctx.kernels.values():
            if kernel.has_dot or not kernel.calls("load") or _calls_dot_helper(ctx, kernel):
                continue
            cache: dict[int, tuple[int, int, int, bool] | None] = {}

            def need(v):
                if id(v) not in cache:
                    cache[id(v)] = live_estimate(ctx, kernel, v, multibuffer)
                return cache[id(v)]

            for v in ctx.failing(kernel, lambda v: (b := need(v)) is not None and b[0] > ub):
                total, live, largest, looped = need(v)
                sizes = sorted(arange_sizes(ctx, kernel, v), key=lambda s: -s[0])
                where = sizes[0][1] if sizes else v.anchor
                yield self.hit(
                    where,
                    kb=total // 1024,
                    live=live,
                    elements=largest,
                    mb=", loop loads x 2 multibuffer" if multibuffer == 2 and looped else "",
                    ub=ub // 1024,
                )
