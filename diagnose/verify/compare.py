"""Comparing a candidate's outputs with the reference's, in the parent process, out of the candidate's reach.

A case passes when every output has the reference's shape and dtype and all elements are within the
dtype's tolerance (`diagnose/verify/tolerances.py`, or an override per dtype name such as `float32`,
which `CheckOptions.tolerances` carries for suites scored with their own tolerances). NaN or Inf where the reference has none fails.
Errors are computed in float64: max absolute error, and max relative error over elements whose reference
magnitude is not tiny.
"""

from __future__ import annotations

from collections.abc import Mapping

from diagnose.records import CaseResult
from diagnose.verify.tolerances import tolerance

Overrides = Mapping[str, tuple[float, float]]


def tolerance_for(dtype_name: str, overrides: Overrides) -> tuple[float, float]:
    """(atol, rtol) for a dtype: the override for its name when there is one, else the default table."""
    name = dtype_name.removeprefix("torch.")
    return overrides[name] if name in overrides else tolerance(dtype_name)


def compare_one(ref, out, overrides: Overrides = {}) -> tuple[bool, float, float, str | None]:  # noqa: B006 - read only
    import torch

    if not isinstance(out, torch.Tensor):
        return False, float("inf"), float("inf"), f"output is a {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return False, float("inf"), float("inf"), f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.dtype != ref.dtype:
        return False, float("inf"), float("inf"), f"dtype {out.dtype} != reference {ref.dtype}"
    if ref.numel() == 0:
        return True, 0.0, 0.0, None
    atol, rtol = tolerance_for(str(ref.dtype), overrides)
    r, o = ref.to(torch.float64), out.to(torch.float64)
    ref_nan, out_nan = torch.isnan(r), torch.isnan(o)
    if bool((out_nan & ~ref_nan).any()):
        return False, float("nan"), float("nan"), f"{int((out_nan & ~ref_nan).sum())} NaN where the reference has none"
    ref_inf, out_inf = torch.isinf(r), torch.isinf(o)
    if bool((out_inf & ~ref_inf).any()) or bool((ref_inf & (o != r)).any()):
        return False, float("inf"), float("inf"), "Inf where the reference has none (or of the other sign)"
    finite = ~(ref_nan | ref_inf)
    if bool((ref_nan & ~out_nan).any()):
        return False, float("nan"), float("nan"), "a number where the reference has NaN"
    diff = (o - r).abs()[finite]
    mag = r.abs()[finite]
    max_abs = float(diff.max()) if diff.numel() else 0.0
    significant = mag > max(atol, 1e-12)
    max_rel = float((diff[significant] / mag[significant]).max()) if bool(significant.any()) else 0.0
    bad = diff > atol + rtol * mag
    if bool(bad.any()):
        return False, max_abs, max_rel, f"{int(bad.sum())} of {r.numel()} elements outside atol={atol:g}, rtol={rtol:g}"
    return True, max_abs, max_rel, None


def compare_case(group: str, seed: int, refs: list, outs: list, overrides: Overrides = {}) -> CaseResult:  # noqa: B006
    if len(outs) != len(refs):
        return CaseResult(group, seed, False, reason=f"{len(outs)} outputs, the reference has {len(refs)}")
    worst_abs = worst_rel = 0.0
    for index, (ref, out) in enumerate(zip(refs, outs)):
        ok, max_abs, max_rel, reason = compare_one(ref, out, overrides)
        if not ok:
            where = f"output {index}: " if len(refs) > 1 else ""
            return CaseResult(group, seed, False, max_abs, max_rel, where + reason)
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
    return CaseResult(group, seed, True, worst_abs, worst_rel)
