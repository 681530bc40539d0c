"""A float64 oracle: the reference run again in float64, where the reference itself is off the truth.

The tolerance table (`tolerances.py`) measures a candidate against the reference, which is only as exact
as its own arithmetic: a float32 sum of large terms that cancel, a convolution cuDNN runs in TF32 (on by
default for convolutions), a reference that computes in half precision and returns float32. There an
honest candidate that is more exact than the reference, or exact in another order (Inductor's
convolution differs from cuDNN's by 1.7e-4 on KernelBench level 2, beyond float32's 1e-4), fails.

So the reference job also runs a float64 copy of `Model` (its parameters, buffers and floating inputs
cast; TF32 does not apply to float64) on each case's inputs, and compares the reference with it. Where
an output is within tolerance of the oracle (every element of an evenly spaced sample of at most `SAMPLE`),
nothing changes and nothing is kept. Where some elements are not, the output's oracle is kept (`Oracle`, in the output's dtype) with a slack: twice the
99.9th percentile of the reference's own distance from it. An element of a candidate's output then
passes when it is within tolerance of the reference, as before, or within tolerance plus the slack of
the oracle: a candidate may be as far from the truth as the reference is, element by element up to the
reference's typical error, not further. (Twice: two results that are each within `q` of the truth are
within `2q` of each other; a percentile, not the maximum: a threshold the two precisions decide
differently at a few elements must not widen the whole output's tolerance.)

No oracle where it would not be one or would cost too much: a reference that launches Triton kernels
(its kernels at float64 are other kernels, and under the interpreter a second run doubles the reference
job), a forward slower than `BUDGET_S`, a model that does not run in float64, outputs of another
structure, or a reference whose typical distance from the
float64 run is above `SAME_FUNCTION` of the output's root mean square (a random draw in the forward, an
algorithm chosen by precision: not the same function computed more exactly).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from diagnose.verify.tolerances import tolerance

# A reference whose forward takes longer than this gets no oracle: its float64 run can cost several times
# more (on the CPU no oneDNN at float64: KernelBench's AlexNet at batch 1024 took 14 s and 3.4 GB in
# float32, 63 s and 19 GB in float64, past the worker's memory cap).
BUDGET_S = 2.0
# The reference's 99.9th-percentile distance from the float64 run above this fraction of the output's
# root mean square: the two are not one function computed at two precisions.
SAME_FUNCTION = 0.1
PERCENTILE = 0.999
SLACK = 2.0
# Elements the percentile is read from (evenly spaced), and per step of the comparisons.
SAMPLE = 1 << 20
STEP = 1 << 22


@dataclass(frozen=True)
class Oracle:
    """One output's float64 result (in the output's dtype), the slack a candidate gets against it, and
    how far the reference itself is from it (elements beyond tolerance, the largest distance)."""

    values: object  # torch.Tensor
    slack: float
    off: int
    worst: float

    def as_dict(self) -> dict:
        return {"values": self.values, "slack": self.slack, "off": self.off, "worst": self.worst}


def float64_model(model):
    """A float64 copy of `model` (its floating parameters and buffers cast), or None where it cannot be made."""
    try:
        return copy.deepcopy(model).double()
    except Exception:  # noqa: BLE001 - a model that cannot be copied or cast has no oracle
        return None


def float64_inputs(inputs: list) -> list:
    """The inputs with every floating tensor cast to float64 (copies: the reference's own stay as drawn)."""
    import torch  # deferred: torch is heavy

    return [v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]


def measure(references: list, oracle_outputs: list) -> list[Oracle | None]:
    """Per reference output, its `Oracle` where the reference is beyond tolerance of the float64 result
    at sampled elements, else None (also where the two do not pair up, or are not one function)."""
    import torch  # deferred: torch is heavy

    if len(oracle_outputs) != len(references):
        return [None] * len(references)
    out: list[Oracle | None] = []
    for ref, exact in zip(references, oracle_outputs):
        if not (
            isinstance(ref, torch.Tensor)
            and isinstance(exact, torch.Tensor)
            and ref.is_floating_point()
            and exact.is_floating_point()
            and ref.shape == exact.shape
            and ref.numel() > 0
        ):
            out.append(None)
            continue
        out.append(_oracle(ref, exact))
    return out


def _oracle(ref, exact) -> Oracle | None:
    import torch  # deferred: torch is heavy

    atol, rtol = tolerance(str(ref.dtype))
    # Most references are within tolerance of their float64 run: an evenly spaced sample says so at the
    # cost of a few operations (a 2^26-element float32 output took 4 s in float64 steps, 0.5 s whole in
    # its own dtype). A reference off at elements the sample misses keeps no oracle: it is then judged
    # against itself alone, as without one, never more loosely.
    stride = max(1, ref.numel() // SAMPLE)
    r, e = ref.reshape(-1)[::stride].to(torch.float64), exact.reshape(-1)[::stride].to(torch.float64)
    if not bool(((r - e).abs() > atol + rtol * e.abs()).any()):
        return None
    values = exact.to(ref.dtype)
    diff = (ref - values).abs_()
    off = int((diff > values.abs().mul_(rtol).add_(atol)).sum())  # NaN compares False: not counted
    if off == 0:
        return None
    finite = torch.isfinite(ref) & torch.isfinite(values)
    worst = float(diff[finite].max()) if bool(finite.any()) else 0.0
    root_mean_square = (
        float(torch.linalg.vector_norm(values[finite], dtype=torch.float64)) / max(1, int(finite.sum())) ** 0.5
    )
    both = torch.isfinite(r) & torch.isfinite(e)
    typical = float(torch.quantile((r - e).abs()[both], PERCENTILE)) if bool(both.any()) else 0.0
    if typical > SAME_FUNCTION * root_mean_square:
        return None
    return Oracle(values, SLACK * typical, off, worst)


def beyond(ref, out, oracle: Oracle, atol: float, rtol: float) -> int:
    """Elements of `out` within tolerance neither of the reference nor (with the slack) of the oracle;
    NaN and Inf are judged before this, so only elements finite on every side are counted."""
    import torch  # deferred: torch is heavy

    ref_flat, out_flat, exact_flat = ref.reshape(-1), out.reshape(-1), oracle.values.reshape(-1)
    bad = 0
    for start in range(0, ref_flat.numel(), STEP):
        r = ref_flat[start : start + STEP].to(torch.float64)
        o = out_flat[start : start + STEP].to(torch.float64)
        e = exact_flat[start : start + STEP].to(torch.float64)
        near_reference = (o - r).abs() <= atol + rtol * r.abs()
        near_oracle = (o - e).abs() <= atol + oracle.slack + rtol * e.abs()
        finite = torch.isfinite(r) & torch.isfinite(o) & torch.isfinite(e)
        bad += int((finite & ~near_reference & ~near_oracle).sum())
    return bad
