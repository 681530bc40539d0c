"""Comparing a candidate's outputs with the reference's, in the parent process, out of the candidate's reach.

A case passes when every output has the reference's shape and dtype and all elements are within the
dtype's tolerance (`diagnose/verify/tolerances.py`, or an override per dtype name such as `float32`,
which `CheckOptions.tolerances` carries for suites scored with their own tolerances). NaN or Inf where the reference has none fails.
Errors are max absolute error and max relative error over elements whose reference magnitude is not tiny:
where every element is finite and within tolerance they are computed in the tensors' own dtype (`within_at_once`,
a few operations per step of a few MiB), elsewhere in float64, in steps on a pool of threads.

Where the reference's values lie below the absolute tolerance (root mean square under `atol`: an fp16
softmax over rows of thousands of columns), the elementwise test is blind: zeros pass it. There the
output must also have the reference's size, its norm within `NORM_RATIO` of the reference's, and be the
reference's result: the norm of the difference within `BLIND_ERROR` of the reference's norm (over at
least `NORM_MIN_ELEMENTS` elements, where two honest results that differ only by rounding noise still
agree in norm). Zeros, half an output, another input's result (a cache) or a constant near the mean
(a softmax of small logits is nearly uniform) all fail there.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from diagnose.records import CaseResult
from diagnose.verify.oracle import Oracle, beyond
from diagnose.verify.tolerances import tolerance

Overrides = Mapping[str, tuple[float, float]]


def tolerance_for(dtype_name: str, overrides: Overrides) -> tuple[float, float]:
    """(atol, rtol) for a dtype: the override for its name when there is one, else the default table."""
    name = dtype_name.removeprefix("torch.")
    return overrides[name] if name in overrides else tolerance(dtype_name)


# Elements per step, below torch's grain size (32768), so that each op of a step runs on the thread that
# calls it; steps go to a pool of Python threads instead (torch's ops release the GIL). Steps of 2^17 ran
# each op on torch's own thread team, whose barriers stall when other work holds the cores: softmax's
# comparisons on an H100 went 5 -> 14 s beside Inductor's compile pool, and on two cores a 2^24-element
# fp32 comparison took 3-14 s beside a process running torch's own team (0.2 s in steps of 2^15 on a
# pool). Idle, two cores, `benchmarks/compare_speed.py`: 2^26 fp32 1.08 -> 0.64-0.75 s; beside two busy
# loops, 2^24 fp32 0.75 -> 0.49 s.
CHUNK = 1 << 15
# Elements per step of `within_at_once`: a few MiB, so that its temporaries stay in cache.
AT_ONCE = 1 << 20
# Threads comparing one output's steps.
WORKERS = max(1, min(16, os.cpu_count() or 1))
NORM_RATIO = (0.8, 1.25)
# Where the reference's values lie below atol: the largest norm of the difference, as a fraction of the
# reference's norm. Honest results differ by rounding (fp16 ~1e-3, bf16 a few 1e-3, fp32 sums with heavy
# cancellation ~1e-3); another seed's softmax differs by ~1.1, a constant 1/n by ~0.1 (logits of 0.1 randn).
BLIND_ERROR = 0.05
NORM_MIN_ELEMENTS = 256


@dataclass(frozen=True)
class Step:
    """What one step of a comparison found."""

    bad: int = 0  # elements outside the tolerance
    new_nan: int = 0  # NaN where the reference has none
    inf_wrong: bool = False  # Inf where the reference has none, or of the other sign
    nan_lost: bool = False  # a number where the reference has NaN
    max_abs: float = 0.0
    max_rel: float = 0.0
    ref_sq: float = 0.0  # sums of squares over elements finite on both sides
    out_sq: float = 0.0
    err_sq: float = 0.0  # of the difference
    finite: int = 0


def step(r, o, atol: float, rtol: float) -> Step:
    """Compare one step of the reference (`r`) and output (`o`), in float64."""
    import torch  # deferred: torch is heavy

    r, o = r.to(torch.float64), o.to(torch.float64)
    if bool(torch.isfinite(r).all()) and bool(torch.isfinite(o).all()):  # the usual step: no masks
        diff = (o - r).abs_()
        mag = r.abs()
        relative = torch.where(mag > max(atol, 1e-12), diff / mag, 0.0)
        return Step(
            bad=int((diff > mag.mul_(rtol).add_(atol)).sum()),
            max_abs=float(diff.max()),
            max_rel=float(relative.max()),
            ref_sq=float(r.dot(r)),
            out_sq=float(o.dot(o)),
            err_sq=float(diff.dot(diff)),
            finite=r.numel(),
        )
    ref_nan, out_nan = torch.isnan(r), torch.isnan(o)
    ref_inf, out_inf = torch.isinf(r), torch.isinf(o)
    finite = ~(ref_nan | ref_inf)
    both = finite & torch.isfinite(o)
    diff = (o - r).abs()[finite]
    mag = r.abs()[finite]
    significant = mag > max(atol, 1e-12)
    return Step(
        bad=int((diff > atol + rtol * mag).sum()),
        new_nan=int((out_nan & ~ref_nan).sum()),
        inf_wrong=bool((out_inf & ~ref_inf).any()) or bool((ref_inf & (o != r)).any()),
        nan_lost=bool((ref_nan & ~out_nan).any()),
        max_abs=float(diff.max()) if diff.numel() else 0.0,
        max_rel=float((diff[significant] / mag[significant]).max()) if bool(significant.any()) else 0.0,
        ref_sq=float(r[both].square().sum()),
        out_sq=float(o[both].square().sum()),
        err_sq=float((o[both] - r[both]).square().sum()),
        finite=int(both.sum()),
    )


def compare_one(
    ref,
    out,
    overrides: Overrides = {},  # noqa: B006 - read only
    unwritten: bool = False,
    oracle: Oracle | None = None,
    early: bool = False,
) -> tuple[bool, float, float, str | None]:
    """(passed, max abs error, max rel error, why not). `unwritten`: the reference's NaN marks memory its
    kernel left unwritten, and the candidate's value there is not judged (an output of a timed call,
    where new memory is not filled with NaN: `timing_jobs.TimedRecheck`). `oracle`: where the reference
    is itself off its float64 result, an element may be within tolerance of either (`oracle.beyond`).
    `early`: stop at the first steps that fail it, for a caller that needs only whether it passes (the
    ghost replay); the errors and counts are then those found up to there ("at least")."""
    import torch  # deferred: torch is heavy

    if not isinstance(out, torch.Tensor):
        return False, float("inf"), float("inf"), f"output is a {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return False, float("inf"), float("inf"), f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.dtype != ref.dtype:
        return False, float("inf"), float("inf"), f"dtype {out.dtype} != reference {ref.dtype}"
    if ref.numel() == 0:
        return True, 0.0, 0.0, None
    if equal(ref, out):  # the same values (so no NaN anywhere): nothing to measure
        return True, 0.0, 0.0, None
    atol, rtol = tolerance_for(str(ref.dtype), overrides)
    passed = within_at_once(ref, out, atol, rtol)
    if passed is not None:
        return passed
    steps = stepped(ref.reshape(-1), out.reshape(-1), atol, rtol, early and oracle is None, unwritten)
    partial = "at least " if len(steps) < -(-ref.numel() // CHUNK) else ""
    new_nan, bad = sum(s.new_nan for s in steps), sum(s.bad for s in steps)
    max_abs, max_rel = max(s.max_abs for s in steps), max(s.max_rel for s in steps)
    ref_sq, out_sq, err_sq, finite_count = (
        sum(s.ref_sq for s in steps),
        sum(s.out_sq for s in steps),
        sum(s.err_sq for s in steps),
        sum(s.finite for s in steps),
    )
    # the same precedence as one pass over the whole tensor: NaN, Inf, a lost NaN, then the tolerance
    if new_nan:
        why = "computed, or never written: checks fill new memory with NaN"
        return False, float("nan"), float("nan"), f"{partial}{new_nan} NaN where the reference has none ({why})"
    if any(s.inf_wrong for s in steps):
        return False, float("inf"), float("inf"), "Inf where the reference has none (or of the other sign)"
    if any(s.nan_lost for s in steps) and not unwritten:
        return False, float("nan"), float("nan"), "a number where the reference has NaN"
    if bad and oracle is not None:
        bad = beyond(ref, out, oracle, atol, rtol)
        if bad:
            return (
                False,
                max_abs,
                max_rel,
                (
                    f"{bad} of {ref.numel()} elements outside atol={atol:g}, rtol={rtol:g} of the reference and "
                    f"of its float64 oracle (slack {oracle.slack:.3g}, the reference's own error)"
                ),
            )
    if bad:
        return False, max_abs, max_rel, f"{partial}{bad} of {ref.numel()} elements outside atol={atol:g}, rtol={rtol:g}"
    why = not_the_result(ref_sq, out_sq, err_sq if oracle is None else None, finite_count, atol)
    if why:
        return False, max_abs, max_rel, why
    return True, max_abs, max_rel, None


def not_the_result(ref_sq: float, out_sq: float, err_sq: float | None, count: int, atol: float) -> str | None:
    """Why an output within tolerance element by element is still not the reference's result, where the
    reference's values lie below `atol` (the elementwise test is blind there): its norm is not the
    reference's, or the difference (sum of squares `err_sq`) is more than `BLIND_ERROR` of it; else None.
    `err_sq` None: the reference is off its float64 oracle, and only its norm is held to."""
    if count < NORM_MIN_ELEMENTS or not 0.0 < ref_sq < atol * atol * count:
        return None
    below = (
        f"the reference's values lie below atol={atol:g}: within tolerance element by element, but not the same result"
    )
    ratio = (out_sq / ref_sq) ** 0.5
    if not NORM_RATIO[0] <= ratio <= NORM_RATIO[1]:
        return f"output norm {ratio:.2f}x the reference's; {below}"
    error = (err_sq / ref_sq) ** 0.5 if err_sq is not None else 0.0
    if error > BLIND_ERROR:
        return f"output off the reference by {error:.2f} of its norm; {below}"
    return None


def failing(found: Step, unwritten: bool) -> bool:
    """Whether a step settles the comparison as failed, whatever the other steps find."""
    return bool(found.bad or found.new_nan or found.inf_wrong or (found.nan_lost and not unwritten))


def stepped(ref_flat, out_flat, atol: float, rtol: float, early: bool, unwritten: bool) -> list[Step]:
    """The float64 pass in steps of `CHUNK` on a pool of threads; with `early`, in rounds of a few steps
    per thread, ending after the first round with a failing step (a ghost replay's NaN output failed in
    its first round, and took seconds to count whole on a 2^26-element output)."""
    starts = range(0, ref_flat.numel(), CHUNK)

    def one(start: int) -> Step:
        return step(ref_flat[start : start + CHUNK], out_flat[start : start + CHUNK], atol, rtol)

    serial = len(starts) == 1 or WORKERS == 1
    size = len(starts) if not early else 1 if serial else WORKERS * 4
    found: list[Step] = []
    with contextlib.nullcontext() if serial else ThreadPoolExecutor(min(WORKERS, len(starts))) as pool:
        for first in range(0, len(starts), size):
            part = list((map if serial else pool.map)(one, starts[first : first + size]))
            found += part
            if early and any(failing(s, unwritten) for s in part):
                break
    return found


def within_at_once(ref, out, atol: float, rtol: float) -> tuple[bool, float, float, None] | None:
    """The usual comparison, where every element is finite and within tolerance, in a few operations per
    step of `AT_ONCE` elements in the tensors' own dtype: (True, max abs, max rel, None), or None at the
    first step where that does not hold, or where the values lie below `atol` and the output is not the
    reference's result (`not_the_result`; the stepped pass in float64 then finds what and where).

    Steps run on a pool of Python threads, each operation on one core (`one_core_per_op`), every thread
    writing into buffers of its own. Measured (`benchmarks/compare_speed.py`, 2^26 fp32 `near`): over the
    whole tensor at once, 0.061 s on the H200's 16-core host but 0.85-0.93 s on two cores, where each
    operation's new 256 MiB temporary was most of it; in steps of 2^15 on a pool of Python threads, 0.45 s
    on two cores but 0.93 s on an H100's 16-core host (each step's calls under the GIL); in steps of 2^20
    one after another, each operation on torch's team of threads, 0.115 s on an H100's host idle, but
    4-14 s for a `check`'s outputs there while the baselines' worker compiled beside it, and 2.5-3x slower
    than one thread on two busy cores: a team waits at every operation's end for its slowest thread, and
    a thread that another process holds off its core holds up the team (session 37)."""
    if not (ref.is_floating_point() and out.is_floating_point()) or ref.numel() < NORM_MIN_ELEMENTS:
        return None
    import torch  # deferred: torch is heavy

    ref_flat, out_flat = ref.reshape(-1), out.reshape(-1)
    floor = max(atol, 1e-12)
    size = min(AT_ONCE, ref_flat.numel())
    mine = threading.local()  # each thread's buffers: new memory per operation and step made this slow
    failed = threading.Event()

    def one(start: int) -> tuple[float, float, float, float, float] | None:
        if failed.is_set():
            return None
        if not hasattr(mine, "scratch"):
            mine.scratch = tuple(torch.empty(size, dtype=ref.dtype) for _ in range(3))
            mine.mask = torch.empty(size, dtype=torch.bool)
        r, o = ref_flat[start : start + AT_ONCE], out_flat[start : start + AT_ONCE]
        found = step_within(
            r, o, atol, rtol, floor, tuple(b[: r.numel()] for b in mine.scratch), mine.mask[: r.numel()]
        )
        if found is None:
            failed.set()
        return found

    steps = in_steps(one, range(0, ref_flat.numel(), AT_ONCE))
    if failed.is_set():  # a step found an element outside (the steps after it did nothing)
        return None
    max_abs, max_rel = max(step[0] for step in steps), max(step[1] for step in steps)
    ref_sq, out_sq, err_sq = (sum(step[i] for step in steps) for i in (2, 3, 4))
    if not (ref_sq < float("inf") and out_sq < float("inf") and err_sq < float("inf")):
        return None  # sums past the float32 range: the stepped pass in float64 decides
    # Values below atol (an fp16 softmax over wide rows): the norm test of `compare_one`, here, where it
    # passes; where it fails the stepped pass says by how much. (Before, every such output took the
    # stepped float64 pass: 1-3 s per 2^26 elements on an H100's host, most of `check`'s comparing.)
    if not_the_result(ref_sq, out_sq, err_sq, ref.numel(), atol):
        return None
    return True, max_abs, max_rel, None


def in_steps(one: Callable[[int], Any], starts: range) -> list:
    """`one(start)` for every start: on this thread where there is one step, else on a pool of `WORKERS`
    Python threads with every torch operation on one core (`one_core_per_op`)."""
    if len(starts) == 1 or WORKERS == 1:
        return [one(start) for start in starts]
    with one_core_per_op(), ThreadPoolExecutor(min(WORKERS, len(starts))) as pool:
        return list(pool.map(one, starts))


def equal(ref, out) -> bool:
    """`torch.equal`, in steps of `AT_ONCE` on the pool of `in_steps` where the tensors are larger."""
    import torch  # deferred: torch is heavy

    if ref.numel() <= AT_ONCE or not (ref.is_contiguous() and out.is_contiguous()):
        return bool(torch.equal(ref, out))
    ref_flat, out_flat = ref.reshape(-1), out.reshape(-1)
    differ = threading.Event()

    def one(start: int) -> bool:
        same = not differ.is_set() and torch.equal(ref_flat[start : start + AT_ONCE], out_flat[start : start + AT_ONCE])
        if not same:
            differ.set()
        return same

    return all(in_steps(one, range(0, ref_flat.numel(), AT_ONCE)))


class one_core_per_op:  # noqa: N801 - used as a context manager, named as one
    """Torch's operations in this process on one core each (`torch.set_num_threads(1)`) while any
    comparison's steps run on a pool, and torch's own count put back when the last one ends. The count is
    the process's, so the comparisons that overlap (a sweep's, on threads of one parent) share one count
    of users (a class attribute: the one state this module keeps, as torch keeps the count)."""

    lock = threading.Lock()
    users = 0
    before = 1

    def __enter__(self) -> None:
        import torch  # deferred: torch is heavy

        with one_core_per_op.lock:
            if one_core_per_op.users == 0:
                one_core_per_op.before = torch.get_num_threads()
                torch.set_num_threads(1)
            one_core_per_op.users += 1

    def __exit__(self, *exc) -> None:
        import torch  # deferred: torch is heavy

        with one_core_per_op.lock:
            one_core_per_op.users -= 1
            if one_core_per_op.users == 0:
                torch.set_num_threads(one_core_per_op.before)


def step_within(
    r, o, atol: float, rtol: float, floor: float, scratch: tuple, mask
) -> tuple[float, float, float, float, float] | None:
    """One step of `within_at_once`: (max abs, max rel, the sums of squares of the reference, the output and
    their difference), or None where an
    element is outside the tolerance or not finite (NaN and Inf - Inf propagate through the maximum). Every
    operation writes into `scratch` (three buffers of the step's size and dtype) and `mask`."""
    import torch  # deferred: torch is heavy

    diff, mag, work = scratch
    torch.sub(o, r, out=diff).abs_()
    torch.abs(r, out=mag)
    torch.mul(mag, -rtol, out=work).add_(diff)  # |o - r| - rtol |r|, at most atol everywhere
    if not float(work.max()) <= atol:
        return None
    torch.div(diff, mag, out=work)
    work.masked_fill_(torch.le(mag, floor, out=mask), 0.0)  # relative error only where |r| is above the floor
    wide = torch.float64 if r.dtype == torch.float64 else torch.float32
    ref_sq = float(torch.linalg.vector_norm(r, dtype=wide)) ** 2
    out_sq = float(torch.linalg.vector_norm(o, dtype=wide)) ** 2
    err_sq = float(torch.linalg.vector_norm(diff, dtype=wide)) ** 2
    return float(diff.max()), float(work.max()), ref_sq, out_sq, err_sq


def compare_case(
    group: str,
    seed: int,
    refs: list,
    outs: list,
    overrides: Overrides = {},  # noqa: B006 - read only
    unwritten: bool = False,
    oracles: tuple = (),
    early: bool = False,
) -> CaseResult:
    """One case's outputs against the reference's; `oracles`, where given, per output, and `early` as in
    `compare_one`."""
    if len(outs) != len(refs):
        return CaseResult(group, seed, False, reason=f"{len(outs)} outputs, the reference has {len(refs)}")
    if not refs:  # nothing to compare is not a pass: any candidate would match
        return CaseResult(group, seed, False, reason="no output to compare: the call returns and writes no tensor")
    worst_abs = worst_rel = 0.0
    for index, (ref, out) in enumerate(zip(refs, outs)):
        oracle = oracles[index] if index < len(oracles) else None
        ok, max_abs, max_rel, reason = compare_one(ref, out, overrides, unwritten, oracle, early)
        if not ok:
            where = f"output {index}: " if len(refs) > 1 else ""
            return CaseResult(group, seed, False, max_abs, max_rel, where + reason)
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
    return CaseResult(group, seed, True, worst_abs, worst_rel)
