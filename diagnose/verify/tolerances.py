"""Per-dtype tolerances for correctness, in one table.

An element passes when `|out - ref| <= atol + rtol * |ref|` (as `torch.allclose`), with NaN allowed only
where the reference has NaN and infinities only where the reference has the same infinity. The values
follow KernelBench (fp32 1e-4; fp16 and bf16 1e-2): tight enough to catch wrong indexing and dropped
terms, loose enough for a different but valid reduction order. Integer and boolean outputs must match
exactly. A dtype missing from the table falls back to the fp32 row.
"""

from __future__ import annotations

# dtype name (as `str(torch.dtype)` without "torch.") -> (atol, rtol)
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
    "float8_e4m3fn": (1e-1, 1e-1),
    "float8_e5m2": (2e-1, 2e-1),
    "complex64": (1e-4, 1e-4),
    "int64": (0.0, 0.0),
    "int32": (0.0, 0.0),
    "int16": (0.0, 0.0),
    "int8": (0.0, 0.0),
    "uint8": (0.0, 0.0),
    "bool": (0.0, 0.0),
}


def tolerance(dtype_name: str) -> tuple[float, float]:
    return TOLERANCES.get(dtype_name.removeprefix("torch."), TOLERANCES["float32"])
