"""Comparing a candidate's outputs with the reference's, in the parent process, out of the candidate's reach.

A case passes when every output has the reference's shape and dtype and all elements are within the
dtype's tolerance (`diagnose/verify/tolerances.py`, or an override per dtype name such as `float32`,
which `CheckOptions.tolerances` carries for suites scored with their own tolerances). NaN or Inf where the reference has none fails.
Errors are computed in float64: max absolute error, and max relative error over elements whose reference
magnitude is not tiny.

Where the reference's values lie below the absolute tolerance (root mean square under `atol`: an fp16
softmax over rows of thousands of columns), the elementwise test is blind: zeros pass it. There the
output must also have the reference's size: its norm within `NORM_RATIO` of the reference's (over at
least `NORM_MIN_ELEMENTS` elements, where two honest results that differ only by rounding noise still
agree in norm). An output with a quarter of its values missing can still pass; half cannot.
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


# Elements per step: a step's float64 temporaries (1 MiB each) stay in the CPU's caches instead of
# GiB-sized ones in DRAM (a 2^27-element fp32 output took 14 s on two cores in one pass over the
# whole tensor, 1.1 s in steps of 2^17 and 4 s in steps of 2^22: `benchmarks/compare_speed.py`).
CHUNK = 1 << 17
NORM_RATIO = (0.8, 1.25)
NORM_MIN_ELEMENTS = 256


def compare_one(
    ref,
    out,
    overrides: Overrides = {},  # noqa: B006 - read only
    unwritten: bool = False,
) -> tuple[bool, float, float, str | None]:
    """(passed, max abs error, max rel error, why not). `unwritten`: the reference's NaN marks memory its
    kernel left unwritten, and the candidate's value there is not judged (an output of a timed call,
    where new memory is not filled with NaN: `timing_jobs.TimedRecheck`)."""
    import torch  # deferred: torch is heavy

    if not isinstance(out, torch.Tensor):
        return False, float("inf"), float("inf"), f"output is a {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return False, float("inf"), float("inf"), f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.dtype != ref.dtype:
        return False, float("inf"), float("inf"), f"dtype {out.dtype} != reference {ref.dtype}"
    if ref.numel() == 0:
        return True, 0.0, 0.0, None
    if torch.equal(ref, out):  # the same values (so no NaN anywhere): nothing to measure
        return True, 0.0, 0.0, None
    atol, rtol = tolerance_for(str(ref.dtype), overrides)
    ref_flat, out_flat = ref.reshape(-1), out.reshape(-1)
    new_nan = bad = 0
    inf_wrong = nan_lost = False
    max_abs = max_rel = 0.0
    ref_sq = out_sq = 0.0
    finite_count = 0
    for start in range(0, ref_flat.numel(), CHUNK):
        r = ref_flat[start : start + CHUNK].to(torch.float64)
        o = out_flat[start : start + CHUNK].to(torch.float64)
        if bool(torch.isfinite(r).all()) and bool(torch.isfinite(o).all()):  # the usual step: no masks to index by
            ref_sq, out_sq, finite_count = ref_sq + float(r.dot(r)), out_sq + float(o.dot(o)), finite_count + r.numel()
            diff = (o - r).abs_()
            mag = r.abs_()
            max_abs = max(max_abs, float(diff.max()))
            relative = torch.where(mag > max(atol, 1e-12), diff / mag, 0.0)
            max_rel = max(max_rel, float(relative.max()))
            bad += int((diff > mag.mul_(rtol).add_(atol)).sum())
            continue
        ref_nan, out_nan = torch.isnan(r), torch.isnan(o)
        new_nan += int((out_nan & ~ref_nan).sum())
        ref_inf, out_inf = torch.isinf(r), torch.isinf(o)
        inf_wrong = inf_wrong or bool((out_inf & ~ref_inf).any()) or bool((ref_inf & (o != r)).any())
        nan_lost = nan_lost or bool((ref_nan & ~out_nan).any())
        finite = ~(ref_nan | ref_inf)
        both = finite & torch.isfinite(o)
        ref_sq, out_sq = ref_sq + float(r[both].square().sum()), out_sq + float(o[both].square().sum())
        finite_count += int(both.sum())
        diff = (o - r).abs()[finite]
        mag = r.abs()[finite]
        if diff.numel():
            max_abs = max(max_abs, float(diff.max()))
        significant = mag > max(atol, 1e-12)
        if bool(significant.any()):
            max_rel = max(max_rel, float((diff[significant] / mag[significant]).max()))
        bad += int((diff > atol + rtol * mag).sum())
    # the same precedence as one pass over the whole tensor: NaN, Inf, a lost NaN, then the tolerance
    if new_nan:
        why = "computed, or never written: checks fill new memory with NaN"
        return False, float("nan"), float("nan"), f"{new_nan} NaN where the reference has none ({why})"
    if inf_wrong:
        return False, float("inf"), float("inf"), "Inf where the reference has none (or of the other sign)"
    if nan_lost and not unwritten:
        return False, float("nan"), float("nan"), "a number where the reference has NaN"
    if bad:
        return False, max_abs, max_rel, f"{bad} of {ref.numel()} elements outside atol={atol:g}, rtol={rtol:g}"
    blind = finite_count >= NORM_MIN_ELEMENTS and 0.0 < ref_sq < atol * atol * finite_count
    if blind and not NORM_RATIO[0] <= (out_sq / ref_sq) ** 0.5 <= NORM_RATIO[1]:
        return (
            False,
            max_abs,
            max_rel,
            (
                f"output norm {(out_sq / ref_sq) ** 0.5:.2f}x the reference's, whose values lie below atol={atol:g}: "
                "within tolerance element by element, but not the same result"
            ),
        )
    return True, max_abs, max_rel, None


def compare_case(
    group: str,
    seed: int,
    refs: list,
    outs: list,
    overrides: Overrides = {},  # noqa: B006 - read only
    unwritten: bool = False,
) -> CaseResult:
    if len(outs) != len(refs):
        return CaseResult(group, seed, False, reason=f"{len(outs)} outputs, the reference has {len(refs)}")
    if not refs:  # nothing to compare is not a pass: any candidate would match
        return CaseResult(group, seed, False, reason="no output to compare: the call returns and writes no tensor")
    worst_abs = worst_rel = 0.0
    for index, (ref, out) in enumerate(zip(refs, outs)):
        ok, max_abs, max_rel, reason = compare_one(ref, out, overrides, unwritten)
        if not ok:
            where = f"output {index}: " if len(refs) > 1 else ""
            return CaseResult(group, seed, False, max_abs, max_rel, where + reason)
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
    return CaseResult(group, seed, True, worst_abs, worst_rel)
