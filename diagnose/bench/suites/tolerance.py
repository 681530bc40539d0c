"""Tolerance profiles for scoring a suite the way its own evaluation does.

- `default`: diagnose's table (`diagnose/verify/tolerances.py`: fp32 1e-4, fp16/bf16 1e-2).
- `kernelbench`: `atol = rtol = 1e-2` for every floating dtype, as KernelBench's `eval.py` calls
  `torch.allclose` (v0/v0.1 used 1e-2 for fp32 too); integers and booleans stay exact.

`overrides(name)` gives the profile as `CheckOptions.tolerances` takes it (dtype name, (atol, rtol))
pairs: the harness compares with them, in the parent process, for that verification only.
"""

from __future__ import annotations

from diagnose.errors import UsageError

FLOATS = ("float64", "float32", "float16", "bfloat16", "complex64")
PROFILES: dict[str, dict[str, tuple[float, float]]] = {
    "default": {},
    "kernelbench": {name: (1e-2, 1e-2) for name in FLOATS},
}


def check(name: str) -> str:
    if name not in PROFILES:
        raise UsageError(f"unknown tolerance profile {name!r}; choose {', '.join(PROFILES)}")
    return name


def overrides(name: str) -> tuple[tuple[str, tuple[float, float]], ...]:
    """The profile's (dtype name, (atol, rtol)) pairs; empty for `default`."""
    return tuple(sorted(PROFILES[check(name)].items()))
