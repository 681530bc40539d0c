"""Tolerance profiles for scoring a suite the way its own evaluation does.

- `default`: diagnose's table (`diagnose/verify/tolerances.py`: fp32 1e-4, fp16/bf16 1e-2).
- `kernelbench`: KernelBench's current `src/kernelbench/eval.py` (`get_tolerance_for_precision`:
  `atol = rtol` = 1e-4 for fp32, 1e-2 for fp16 and bf16; it runs in fp32 by default, so fp64 gets fp32's);
- `kernelbench-v0`: KernelBench v0/v0.1, `atol = rtol = 1e-2` for every floating dtype;
- `datakernel`: DataKernelBench's result matrices (float64, keys and counts held in it too): within
  1e-9 relative and absolute, so a sum may differ by rounding and a key of up to 10^8 may not differ at all;
- `multikernelbench`: MultiKernelBench's checker (`utils/correctness.py`), `atol = rtol = 1e-4` for
  every floating dtype, booleans exact.

Integers and booleans stay exact in every profile.

`overrides(name)` gives the profile as `CheckOptions.tolerances` takes it (dtype name, (atol, rtol))
pairs: the harness compares with them, in the parent process, for that verification only.
"""

from __future__ import annotations

from diagnose.errors import UsageError

FLOATS = ("float64", "float32", "float16", "bfloat16", "complex64")
PROFILES: dict[str, dict[str, tuple[float, float]]] = {
    "default": {},
    "kernelbench": {
        "float64": (1e-4, 1e-4),
        "float32": (1e-4, 1e-4),
        "float16": (1e-2, 1e-2),
        "bfloat16": (1e-2, 1e-2),
        "complex64": (1e-4, 1e-4),
    },
    "kernelbench-v0": {name: (1e-2, 1e-2) for name in FLOATS},
    "multikernelbench": {name: (1e-4, 1e-4) for name in FLOATS},
    "datakernel": {"float64": (1e-9, 1e-9)},
}


def check(name: str) -> str:
    if name not in PROFILES:
        raise UsageError(f"unknown tolerance profile {name!r}; choose {', '.join(PROFILES)}")
    return name


def overrides(name: str) -> tuple[tuple[str, tuple[float, float]], ...]:
    """The profile's (dtype name, (atol, rtol)) pairs; empty for `default`."""
    return tuple(sorted(PROFILES[check(name)].items()))
