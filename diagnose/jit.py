"""Which decorator makes a Triton kernel: one predicate over the decorator's dotted name.

Task loading, triage, the rewrites and the LLM proposer all ask it, each after turning its own
syntax tree's decorator into a dotted name (`triton.jit`, `tl.jit`, a bare `jit` imported from
triton; a call such as `@triton.jit(do_not_specialize=...)` is named by what it calls).

    >>> [is_triton_jit(n) for n in ("triton.jit", "jit", "triton.language.jit", "numba.jit", "torch.jit.script")]
    [True, True, True, False, False]
"""

from __future__ import annotations

# Other compilers' `jit` decorators, by the first part of their dotted name; they sit beside Triton's
# in the same projects (Liger-Kernel's `ops/cutedsl/`).
OTHER_JITS = frozenset(
    {"cute", "cutlass", "numba", "nb", "jax", "torch", "warp", "wp", "taichi", "ti", "tilelang", "mlx"}
)


def is_triton_jit(name: str | None) -> bool:
    """Whether a decorator called `name` (dotted, without a call's arguments) makes a Triton kernel."""
    if not name or name.split(".")[0] in OTHER_JITS:
        return False
    return name == "jit" or name.endswith(".jit")
