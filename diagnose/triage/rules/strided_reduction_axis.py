from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import is_compile_time, is_program_id, pointer_of

# Reductions and scans over the loaded block (what makes the strided axis the one a program walks).
_REDUCING = {
    "triton.language.sum",
    "triton.language.max",
    "triton.language.min",
    "triton.language.argmax",
    "triton.language.argmin",
    "triton.language.xor_sum",
    "triton.language.reduce",
    "triton.language.cumsum",
    "triton.language.cumprod",
    "triton.language.associative_scan",
}


class StridedReductionAxis(Rule):
    """## What it finds
    A 1-D kernel whose program reduces or scans one strided column: it loads a block whose index is
    multiplied by a stride known to exceed 1 (`x_ptr + b * N * D + offs * D + d`, the `D` of `d = pid %
    D` or of a mask `d < D`; or a stride argument the launches pass as more than 1), adds its column `d`
    (from the program id, unscaled or times a stride passed as 1), and reduces or scans what it loaded
    (`tl.sum`, `tl.max`, `tl.cumsum`, ...). A sum, mean, softmax, log-softmax or cumulative sum over the
    middle dimension of a `[B, N, D]` tensor, as first versions write it.

    ## Why it is slow
    Consecutive lanes read addresses `D` elements apart: each touches its own 32-byte sector and uses
    4 of its bytes (fp32), so the kernel moves up to 8x the bytes it needs, and the compiler cannot
    widen the loads (the IR shows 32-bit accesses: "offsets scaled by runtime D"). One program per
    column also makes `B * D` tiny programs. Measured on H200 first versions: a log-softmax over a
    middle dimension at 5-8% of its roofline bound (0.16x of `torch.compile`), a sum at 0.70x.

    ## Example
    ```python
    pid = tl.program_id(0)
    d = pid % D
    offs = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + (pid // D) * N * D + offs * D + d, mask=offs < N, other=0.0)
    tl.store(out_ptr + (pid // D) * D + d, tl.sum(x, axis=0))
    ```

    ## Use instead
    A tile of adjacent columns per program, reduced over axis 0 (`diagnose` rewrite `column-tiles`):
    ```python
    d = (pid % tl.cdiv(D, BLOCK_C)) * BLOCK_C + tl.arange(0, BLOCK_C)
    offs = tl.arange(0, BLOCK_N)[:, None]
    x = tl.load(x_ptr + b * N * D + offs * D + d, mask=(offs < N) & (d < D), other=0.0)
    tl.store(out_ptr + b * D + d, tl.sum(x, axis=0), mask=d < D)
    ```

    ## Known false positives
    Only strides known to exceed 1 are reported: the extent of another axis (the divisor of a `%`/`//`
    or the bound of a `<` in the kernel, or a factor of the address's batch pitch `b * N * D`), or a
    stride argument the launches pass as more than 1 where the host evaluation reaches them
    (`x.stride(1)` of a task's input); a column scaled by a stride argument counts where the launches
    pass it as 1. A generic `stride_n` argument is otherwise left alone, because Triton
    specializes an argument equal to 1 and such strides are 1 on contiguous inputs (Liger-Kernel's and
    vLLM's `x.stride(-1)`).
    Read on vLLM 0.34.0's 363 Triton files, unsloth, TritonBench-G (184) and Liger-Kernel: no finding
    (their reductions over a strided axis tile the contiguous axis already). On FlagGems (532ff438) 7
    findings, all its scans over a middle dimension (`cumsum`'s `scan_part_sum_abc_kernel`, `cummax`,
    `cummin`, and vendor copies): true in what they read (each lane one element `C` apart); the
    advice (adjacent columns, `tl.cumsum(x, axis=0)` over a 2-D tile) holds for these scans too, though
    `column-tiles` declines them (one grid serves the scan and the kernel that adds its carries).

    ## Targets
    cuda, hip.

    ## References
    CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; Triton tutorial 02 (reductions
    over a contiguous `[BLOCK]` row).
    """

    code = "TRI029"
    name = "strided-reduction-axis"
    message = (
        "`{load}` reads one element every `{stride}` per lane and the program reduces or scans them: one strided "
        "column per program, one memory sector per element"
    )
    fix_title = "Reduce a tile of adjacent columns per program (column-tiles)"
    targets = ("cuda", "hip")

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if kernel.is_2d:
                continue
            extents = _extents(kernel)
            known = _launch_values(ctx, kernel)
            reduced = set()
            for call in kernel.calls(*(q.rsplit(".", 1)[1] for q in _REDUCING)):
                if kernel.qualname(call.func) in _REDUCING and call.args:
                    reduced |= kernel.sources(call.args[0])
                    reduced |= {id(n) for n in ast.walk(call.args[0])}
            for load in kernel.calls("load"):
                ptr = pointer_of(load)
                if ptr is None:
                    continue
                stride = _strided_stride(kernel, ctx, ptr, extents, known)
                if stride is None:
                    continue
                target = _assigned_to(kernel, load)
                if id(load) not in reduced and not (target and target in reduced):
                    continue
                yield self.hit(load, load=ast.unparse(ptr), stride=stride)
                break  # one finding per kernel: its other loads of the column read the same way


def _extents(kernel) -> set[str]:
    """Names the kernel uses as the extent of an axis: a `%` or `//` divisor, or the right side of `<`."""
    out = set()
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.FloorDiv)):
            if isinstance(node.right, ast.Name):
                out.add(node.right.id)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt):
            if isinstance(node.comparators[0], ast.Name):
                out.add(node.comparators[0].id)
    return out


def _terms(kernel, expr, depth: int = 0) -> list[ast.AST]:
    """The addends of an address, through names bound once (`base = x_ptr + b * N * D + d`)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _terms(kernel, expr.left, depth) + _terms(kernel, expr.right, depth)
    if isinstance(expr, ast.Name) and depth < 4 and len(kernel.assigns.get(expr.id, ())) == 1:
        value = kernel.assigns[expr.id][0]
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            return _terms(kernel, value, depth + 1)
    return [expr]


def _launch_values(ctx, kernel) -> dict[str, set[int]]:
    """The integer values each kernel parameter takes at the launches the host evaluation reached."""
    out: dict[str, set[int]] = {}
    for variant in ctx.variants(kernel):
        for name in kernel.params:
            value = variant.int(name)
            if value is not None:
                out.setdefault(name, set()).add(value)
    return out


def _strided_stride(kernel, ctx, ptr, extents: set[str], known: dict[str, set[int]]) -> str | None:
    """The stride of an address that reads a strided column: its block term scaled by a run-time
    extent (or by a parameter the launches pass as more than 1), a scalar term from the program id,
    unscaled or scaled by a parameter the launches pass as 1, and no unscaled block term; else None."""
    stride, column = None, False
    terms = _terms(kernel, ptr)
    # a batch pitch `b * N * D` beside `offs * D` says D is a size of the tensor, not a stride argument
    pitches = {
        n.id
        for t in terms
        if isinstance(t, ast.BinOp)
        and isinstance(t.op, ast.Mult)
        and not kernel.is_block(t)
        and _from_program_id(kernel, t)
        for n in ast.walk(t)
        if isinstance(n, ast.Name)
    }
    for term in terms:
        if kernel.is_block(term):
            if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult)):
                return None  # an unscaled block: the axis it walks is contiguous
            sides = [term.left, term.right]
            blocks = [s for s in sides if kernel.is_block(s)]
            others = [s for s in sides if not kernel.is_block(s)]
            if len(blocks) != 1 or len(others) != 1:
                return None
            scale = others[0]
            if not isinstance(scale, ast.Name) or is_compile_time(scale, kernel, ctx):
                return None
            if scale.id not in extents | pitches and not (known.get(scale.id) and min(known[scale.id]) > 1):
                return None
            stride = scale.id
        elif _from_program_id(kernel, term):
            if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult)):
                column = True
            elif any(isinstance(s, ast.Name) and known.get(s.id) == {1} for s in (term.left, term.right)):
                column = True  # `d * stride_d`, the launches passing stride_d = 1
    return stride if column else None


def _from_program_id(kernel, term) -> bool:
    if any(is_program_id(n) for n in ast.walk(term)):
        return True
    names = kernel.sources(term)
    return any(is_program_id(n) for name in names for v in kernel.assigns.get(name, ()) for n in ast.walk(v))


def _assigned_to(kernel, call) -> str | None:
    """The name a load's value is bound to (`x = tl.load(...)`, `acc += tl.load(...)`), if any."""
    parent = kernel.parent.get(call)
    while parent is not None and not isinstance(parent, (ast.Assign, ast.AugAssign, ast.stmt)):
        parent = kernel.parent.get(parent)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        return parent.targets[0].id
    if isinstance(parent, ast.AugAssign) and isinstance(parent.target, ast.Name):
        return parent.target.id
    return None
