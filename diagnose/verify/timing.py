"""The timing protocol, worker side: device events, a cold L2, warm-up outside, a stable median.

Each repetition: flush the L2 by writing a buffer larger than it, record a start event on the current
stream, call the function, record an end event. Events are read only after the batch, so the host never
waits between repetitions. Every variant (candidate, initial kernel, eager, torch.compile) is warmed up
first, then timed in interleaved batches, round after round, until the median of each has moved by less
than `REL_TOL` between rounds (and at least `MIN_REPS` samples exist), or the variant's time budget is
spent. Interleaving puts clock and thermal drift on every variant alike, so ratios of medians from one
run compare like with like.

Spread is reported as p20/p80, the interquartile range and the coefficient of variation; a variant whose
IQR/median exceeds `WIDE_SPREAD` is re-timed once more and, if still wide, marked unstable.

The protocol is the same on every timed device: `cuda` times with `torch.cuda` events, `npu` with
`torch.npu` events (torch_npu); `diagnose.runtime.devices` says which. The flush buffer is twice the
L2 that torch reports, at least `L2_FLUSH_MIN` (256 MiB, above the 910B's 192 MB and the 950's 128 MB
L2, for a device whose properties do not report it).

Work that a function leaves on another stream would escape the events; `side_stream_ratio` times the
same function with a device-wide synchronize inside the timed region (less the host's own time: the
call's launch and the sync's round trip), and a large ratio says so.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable

from diagnose.records import Timing

MIN_REPS = 10
BATCH = 10
MAX_REPS = 2000
REL_TOL = 0.01
WIDE_SPREAD = 0.3
WARMUP_MS = 25.0
BUDGET_S = 8.0
L2_FLUSH_MIN = 256 * 2**20


def quantile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    pos = q * (len(sorted_values) - 1)
    lo, hi = int(pos), min(int(pos) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(variant: str, group: str, samples: list[float], stable: bool, note: str = "") -> Timing:
    values = sorted(samples)
    if not values:
        return Timing(variant, group, note=note or "no samples")
    median = statistics.median(values)
    mean = statistics.fmean(values)
    cv = statistics.pstdev(values) / mean if mean > 0 else 0.0
    iqr = quantile(values, 0.75) - quantile(values, 0.25)
    return Timing(
        variant,
        group,
        median_ms=median,
        p20_ms=quantile(values, 0.2),
        p80_ms=quantile(values, 0.8),
        iqr_ms=iqr,
        cv=cv,
        reps=len(values),
        stable=stable,
        note=note,
    )


class EventTimer:
    """Device events and an L2 flush buffer for one timed device (`cuda`, `npu`).

    What differs between devices (which torch module has the events, the L2 size, the extension to
    import) comes from `diagnose.runtime.devices`; `backend`, `flush_bytes` and `host_clock` (seconds)
    may be given instead (a test's stand-in for the device and the host).
    """

    def __init__(self, device: str, backend: Any = None, flush_bytes: int | None = None,
                 host_clock: Callable[[], float] = time.perf_counter):
        import torch

        from diagnose.runtime import devices

        self.device = device
        self.host_clock = host_clock
        self.backend = backend if backend is not None else devices.events(device)
        size = flush_bytes if flush_bytes is not None else max(2 * devices.l2_bytes(device), L2_FLUSH_MIN)
        self.flush_buffer = torch.empty(size, dtype=torch.uint8, device=devices.torch_device(device))

    def flush(self) -> None:
        self.flush_buffer.zero_()

    def batch(self, fn: Callable[[], Any], reps: int, sync_inside: bool = False) -> list[float]:
        """Milliseconds of `reps` calls, each between two events on the current stream.

        `sync_inside`: a device-wide synchronize before the end event, and each sample less the host's
        milliseconds inside the call. The host is not ahead of the device there: whatever it spends
        launching (a loaded host's slow Python) lands between the events, where the plain batch hides it
        behind the device's queue; work still running when the call returns does not.
        """
        pairs = []
        for _ in range(reps):
            self.flush()
            start, end = self.backend.Event(enable_timing=True), self.backend.Event(enable_timing=True)
            start.record()
            began = self.host_clock()
            fn()
            inside_ms = (self.host_clock() - began) * 1e3 if sync_inside else 0.0
            if sync_inside:
                self.backend.synchronize()
            end.record()
            pairs.append((start, end, inside_ms))
        self.backend.synchronize()
        return [s.elapsed_time(e) - inside for s, e, inside in pairs]

    def warm_up(self, fn: Callable[[], Any]) -> None:
        fn()
        self.backend.synchronize()
        begin = time.perf_counter()
        while (time.perf_counter() - begin) * 1e3 < WARMUP_MS:
            fn()
            self.backend.synchronize()


def converged(samples: list[float], previous_median: float | None) -> bool:
    if len(samples) < MIN_REPS or previous_median is None:
        return False
    median = statistics.median(samples)
    return abs(median - previous_median) <= REL_TOL * median


def measure(timer: EventTimer, variants: dict[str, Callable[[], Any]], group: str) -> list[Timing]:
    """Time every variant, interleaved, until each median is stable; one `Timing` per variant."""
    for fn in variants.values():
        timer.warm_up(fn)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    medians: dict[str, float | None] = {name: None for name in variants}
    done: dict[str, bool] = {name: False for name in variants}
    spent: dict[str, float] = {name: 0.0 for name in variants}
    while not all(done.values()):
        for name, fn in variants.items():
            if done[name]:
                continue
            begin = time.perf_counter()
            samples[name] += timer.batch(fn, BATCH)
            spent[name] += time.perf_counter() - begin
            if converged(samples[name], medians[name]) or len(samples[name]) >= MAX_REPS or spent[name] > BUDGET_S:
                done[name] = True
            medians[name] = statistics.median(samples[name])
    timings = []
    for name, fn in variants.items():
        timing = summarize(name, group, samples[name], stable=True)
        if timing.median_ms and timing.iqr_ms / timing.median_ms > WIDE_SPREAD:
            timing = summarize(name, group, timer.batch(fn, max(MIN_REPS, len(samples[name]))), stable=True)
            if timing.iqr_ms / timing.median_ms > WIDE_SPREAD:
                timing = dataclasses.replace(timing, stable=False, note="spread too wide (IQR over 30% of median)")
        timings.append(timing)
    return timings


def side_stream_ratio(timer: EventTimer, fn: Callable[[], Any], reps: int = 20) -> float:
    """Median time with a device-wide sync inside the timed region, less the host's own time, over the
    median without it.

    The host's time is the call's launch (`EventTimer.batch` with `sync_inside`) and the sync's round
    trip (the end event is recorded only once the host has woken from the sync), timed on a function
    that launches nothing. On the H200 with six runs sharing the host an honest kernel read 1.8x
    slower with the sync and nothing subtracted; with the round trip subtracted, two honest kernels
    among seven runs still read 1.5x, the launch left between the events. What is left is the device
    work still running when the call returns: an honest call's own kernels, or work on another
    stream, which only the sync waits for.
    """
    plain = statistics.median(timer.batch(fn, reps))
    synced = statistics.median(timer.batch(fn, reps, sync_inside=True))
    bare = statistics.median(timer.batch(_nothing, reps))
    round_trip = statistics.median(timer.batch(_nothing, reps, sync_inside=True)) - bare
    return max(synced - max(round_trip, 0.0), plain) / plain if plain > 0 else 1.0


def _nothing() -> None:
    return None
