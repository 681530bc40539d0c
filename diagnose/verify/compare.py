"""Comparing a candidate's outputs with the reference's, in the parent process, out of the candidate's reach.

A case passes when every output has the reference's shape and dtype and all elements are within the
dtype's tolerance (`diagnose/verify/tolerances.py`). NaN or Inf where the reference has none fails.
Errors are computed in float64: max absolute error, and max relative error over elements whose reference
magnitude is not tiny.
"""

from __future__ import annotations

from diagnose.records import CaseResult
from diagnose.verify.tolerances import tolerance


def compare_one(ref, out) -> tuple[bool, float, float, str | None]:
    import torch

    if not isinstance(out, torch.Tensor):
        return False, float("inf"), float("inf"), f"output is a {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return False, float("inf"), float("inf"), f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.dtype != ref.dtype:
        return False, float("inf"), float("inf"), f"dtype {out.dtype} != reference {ref.dtype}"
    if ref.numel() == 0:
        return True, 0.0, 0.0, None
    atol, rtol = tolerance(str(ref.dtype))
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


def compare_case(group: str, seed: int, refs: list, outs: list) -> CaseResult:
    if len(outs) != len(refs):
        return CaseResult(group, seed, False, reason=f"{len(outs)} outputs, the reference has {len(refs)}")
    worst_abs = worst_rel = 0.0
    for index, (ref, out) in enumerate(zip(refs, outs)):
        ok, max_abs, max_rel, reason = compare_one(ref, out)
        if not ok:
            where = f"output {index}: " if len(refs) > 1 else ""
            return CaseResult(group, seed, False, max_abs, max_rel, where + reason)
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
    return CaseResult(group, seed, True, worst_abs, worst_rel)
