from __future__ import annotations

import ast

from diagnose.triage.kernel import TL, Kernel
from diagnose.triage.rule import Rule

SYNC_ATOMICS = {TL + "atomic_" + n for n in ("cas", "xchg", "add", "or", "and", "max", "min", "xor")}
MEMORY = ("load", "store", "dot")


def synchronizes(kernel: Kernel, loop: ast.While) -> bool:
    """A spin-wait or decoupled look-back: the loop polls memory another program writes (an atomic
    or a `volatile=True` load) and does no block work of its own outside the inner spin loops. No
    counted form exists."""
    if not any(_polls(kernel, n) for n in ast.walk(loop)):
        return False
    if any(_polls(kernel, n) for n in ast.walk(loop.test)):
        return True
    todo = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.While):
            continue  # an inner spin-wait
        if isinstance(node, ast.Call) and not _polls(kernel, node):
            name = kernel.qualname(node.func) or ""
            pointer = node.args[0] if node.args else None
            if (
                name == TL + "dot"
                or name in (TL + "load", TL + "store")
                and pointer is not None
                and kernel.is_block(pointer)
            ):
                return False  # tile work: a compute loop that also synchronizes
        todo.extend(ast.iter_child_nodes(node))
    return True


def _polls(kernel: Kernel, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = kernel.qualname(node.func)
    return (
        name in SYNC_ATOMICS
        or name == TL + "load"
        and any(
            k.arg == "volatile" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in node.keywords
        )
    )


def scalar_only(kernel: Kernel, loop: ast.While, helpers=frozenset()) -> bool:
    """The loop touches no memory and computes no blocks (`while w < n: w *= 2`): scalar-unit work
    with nothing to tile or multibuffer. A call to a `@triton.jit` helper counts as block work."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and (
            (kernel.qualname(node.func) or "") in {TL + m for m in MEMORY}
            or isinstance(node.func, ast.Name)
            and node.func.id in helpers
        ):
            return False
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
            if kernel.is_block(node.value) or names & kernel.block_names:
                return False
    return True


class WhileLoopInKernel(Rule):
    """## What it finds
    A `while` loop inside a `@triton.jit` function that loads, stores or computes blocks, other than
    a spin-wait on memory another program writes.

    ## Why it is slow
    triton-ascend compiles `while` (its passes handle `scf.while`), but a data-dependent loop cannot
    be tiled, multibuffered or blockified: its loads do not overlap compute. A `for` loop with a
    constexpr (or argument) bound plus an `if` on the exit condition compiles to a counted loop the
    NPU pipelines. Severity is warning, not error: the loop compiles and runs (FlagGems' own Ascend
    backend ships `while` loops), it is only slower.

    ## Example
    ```python
    while start < n:
        ...
        start += BLOCK
    ```

    ## Use instead
    ```python
    for start in range(0, n, BLOCK):
        ...
    ```

    ## Known false positives
    Measured on all 36 findings of Liger-Kernel, FlagGems, TritonBench and the Triton tutorials
    (25 labelled: 7 true, 16 false, 2 debatable before this section; severity was error, although
    every false one compiles). Now accepted:
    - spin-waits and decoupled look-back (`while tl.atomic_cas(lock, 0, 1) == 1: pass`,
      `while flag == 0: flag = tl.load(p, volatile=True)`, a look-back loop around such a poll):
      they poll memory another program writes, so no counted form exists;
    - scalar-only loops (`while w < n: w *= 2` computing a bound): scalar-unit work, nothing to
      pipeline.
    Still flagged, debatable: a loop that merges other programs' partial tiles, each behind a
    spin-wait (stream-K fix-up): countable, but the waiting dominates.

    ## Targets
    ascend.

    ## References
    mindspore-ai/akg `akg_agents`, `op/resources/docs/triton_ascend_docs/suggestion_docs.md` ("while is
    unsupported").
    """

    code = "ASC009"
    name = "while-loop-in-kernel"
    message = "`while` loop over block work in a kernel; the NPU pipelines counted `for` loops"
    fix_title = "Rewrite as a for loop with a fixed bound and an if on the exit condition"
    severity = "warning"
    targets = ("ascend",)

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for loop in kernel.loops:
                if (
                    isinstance(loop, ast.While)
                    and not synchronizes(kernel, loop)
                    and not scalar_only(kernel, loop, frozenset(ctx.kernels))
                ):
                    yield self.hit(loop)
