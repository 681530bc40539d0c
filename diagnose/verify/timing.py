"""The timing protocol, worker side: device events, a cold L2, warm-up outside, a stable median.

Each repetition: flush the L2 by writing a buffer larger than it, record a start event on the current
stream, call the function, record an end event. Events are read only after the batch, so the host never
waits between repetitions. Every variant (candidate, initial kernel, eager, torch.compile) is warmed up
first, then timed in interleaved batches, round after round, until the median of each has moved by less
than `REL_TOL` between rounds (and at least `MIN_REPS` samples exist), or the variant's time budget is
spent. Interleaving puts clock and thermal drift on every variant alike, and rotating which variant goes
first in each round puts any effect of the position on every variant alike, so ratios of medians from
one run compare like with like.

Spread is reported as p20/p80, the interquartile range and the coefficient of variation; a variant whose
IQR/median exceeds `WIDE_SPREAD` is re-timed once more and, if still wide, marked unstable.

The protocol is the same on every timed device: `cuda` times with `torch.cuda` events, `npu` with
`torch.npu` events (torch_npu); `diagnose.runtime.devices` says which. The flush buffer is twice the
L2 that torch reports, at least `L2_FLUSH_MIN` (256 MiB, above the 910B's 192 MB and the 950's 128 MB
L2, for a device whose properties do not report it).

Work that a function leaves on another stream would escape the events. `escaped_calls` catches the
candidate's own Triton launches doing it: after a call, once the timed stream's work is done, a stream
one of its kernels went to still has work. `side_stream_ratio` catches any work (a library's kernels
too) by its time: each call from an empty queue, once as timed and once with a device-wide synchronize
inside the timed region; a large ratio says work ran on past the events.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable, Protocol

from diagnose.records import Timing
from diagnose.runtime import devices

MIN_REPS = 10
BATCH = 10
MAX_REPS = 2000
REL_TOL = 0.01
WIDE_SPREAD = 0.3
WARMUP_MS = 25.0
BUDGET_S = 8.0
L2_FLUSH_MIN = 256 * 2**20
# A call slower than a few milliseconds gets fewer repetitions, each count down to a floor: the counts above
# are for kernels of micro- to milliseconds, and a call that takes seconds (a full TPC-H query reading GiB
# of Parquet: issue 29 at SF 10 gave no row within 230 s) would spend minutes on them.
BATCH_MS = 2000.0  # one batch of one variant
MIN_REPS_MS = 4000.0  # the samples a median needs
SIDE_STREAM_MS = 2000.0  # each of `side_stream_ratio`'s batches, and `escaped_calls`
LEAST_REPS = 3


def reps_within(call_ms: float | None, budget_ms: float, least: int, most: int) -> int:
    """How many calls of `call_ms` fit in `budget_ms`, kept between `least` and `most` (`most` where the
    call's time is not known)."""
    if not call_ms or call_ms <= 0:
        return most
    return max(least, min(most, int(budget_ms / call_ms)))


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
    import) comes from `diagnose.runtime.devices`; `backend` and `flush_bytes` may be given instead (a
    test's stand-in for the device).
    """

    def __init__(self, device: str, backend: Any = None, flush_bytes: int | None = None):
        import torch  # deferred: torch is heavy

        self.device = device
        self.backend = backend if backend is not None else devices.events(device)
        size = flush_bytes if flush_bytes is not None else max(2 * devices.l2_bytes(device), L2_FLUSH_MIN)
        self.flush_buffer = torch.empty(size, dtype=torch.uint8, device=devices.torch_device(device))

    def flush(self) -> None:
        self.flush_buffer.zero_()

    def batch(self, fn: Callable[[], Any], reps: int, sync_inside: bool = False, cold: bool = False) -> list[float]:
        """Milliseconds of `reps` calls, each between two events on the current stream.

        `cold`: each call starts from an empty queue (a synchronize first), so the host's time launching
        it lies between the events whenever it outlasts the device's work, as it does with `sync_inside`.
        `sync_inside`: a device-wide synchronize before the end event, so work still running on any
        stream when the call returns is inside too (and the host's wake from the sync).
        """
        pairs = []
        for _ in range(reps):
            if cold:
                self.backend.synchronize()
            self.flush()
            start, end = self.backend.Event(enable_timing=True), self.backend.Event(enable_timing=True)
            start.record()
            fn()
            if sync_inside:
                self.backend.synchronize()
            end.record()
            pairs.append((start, end))
        self.backend.synchronize()
        return [s.elapsed_time(e) for s, e in pairs]

    def warm_up(self, fn: Callable[[], Any]) -> float:
        """Call `fn` until `WARMUP_MS` have passed (twice at least); the milliseconds a call took, by the
        host's clock (what the repetitions that follow are counted from: `reps_within`)."""
        fn()
        self.backend.synchronize()
        begin, calls = time.perf_counter(), 0
        while (time.perf_counter() - begin) * 1e3 < WARMUP_MS:
            fn()
            self.backend.synchronize()
            calls += 1
        return (time.perf_counter() - begin) * 1e3 / calls


@dataclasses.dataclass(frozen=True)
class PinnedEvents:
    """A device's `Event` class, `synchronize` and `current_stream` as they were before any candidate code
    ran in this process: the timer that uses them does not see a later `torch.cuda.Event = ...` or
    `torch.cuda.synchronize = ...`. What it cannot hold apart is the class itself: a candidate that
    patches a method on it (`torch.cuda.Event.elapsed_time = lambda s, e: 0.1 * real(s, e)`) changes the
    pinned class too, so every method of every class in its MRO is recorded here, and `replaced()`
    names those changed, removed or added since (the timing job fails on any: its times would be the
    candidate's to choose). Torch's C base class cannot be patched at all."""

    Event: Any
    synchronize: Callable[[], Any]
    current_stream: Callable[[], Any] | None
    methods: tuple[tuple[type, tuple[tuple[str, Any], ...]], ...]

    @classmethod
    def of(cls, backend: Any) -> "PinnedEvents":
        event = backend.Event
        classes = [k for k in getattr(event, "__mro__", (event,)) if k is not object]
        return cls(
            event,
            backend.synchronize,
            getattr(backend, "current_stream", None),
            tuple((k, tuple(vars(k).items())) for k in classes),
        )

    def replaced(self) -> list[str]:
        out = []
        for klass, members in self.methods:
            now = dict(vars(klass))
            before = dict(members)
            for name in sorted(set(before) | set(now)):
                if name in _CACHED or before.get(name, _MISSING) is now.get(name, _MISSING):
                    continue
                out.append(f"{klass.__name__}.{name}")
        return out


_MISSING = object()
_CACHED = ("__doc__", "__slotnames__")  # set on a class by Python itself (copyreg caches `__slotnames__`)


def check_pinned(pinned: PinnedEvents) -> None:
    """Fail the timing job when the candidate patched the event class its times were read with."""
    replaced = pinned.replaced()
    if replaced:
        raise RuntimeError(
            f"the candidate replaced {', '.join(replaced)} of the device's events: the times "
            "read with them would be its own to choose"
        )


def converged(samples: list[float], previous_median: float | None, least: int = MIN_REPS) -> bool:
    if len(samples) < least or previous_median is None:
        return False
    median = statistics.median(samples)
    return abs(median - previous_median) <= REL_TOL * median


class Probe(Protocol):
    """One of a variant's timed calls that does something besides (`timing_jobs.TimedRecheck`)."""

    def arm(self, calls: int) -> None:
        """Start counting timed calls; `calls` is about how many the timing budget leaves."""

    @property
    def pending(self) -> bool: ...


def measure(
    timer: EventTimer, variants: dict[str, Callable[[], Any]], group: str, probe: Probe | None = None
) -> list[Timing]:
    """Time every variant, interleaved, until each median is stable; one `Timing` per variant.

    Each round times one batch of every variant, the round's first variant rotating, and rounds go on
    until every variant is stable (or spent its budget): every variant then holds each place in the
    order as often as the others. Position alone moves a time: timed always in one order, a kernel
    read 18% slower in first place than in sixth (0.1039 ms against 0.0877 ms on an H200).

    `probe` (`timing_jobs.TimedRecheck`): armed once the warm-up is over, and the rounds go on until it
    has fired (or every budget is spent), however early the medians settle.

    The batch and the samples a median needs shrink for a variant whose warm-up calls were slow
    (`reps_within`): ten calls of a second-long query are a batch of one, and three samples do."""
    per_call = {name: timer.warm_up(fn) for name, fn in variants.items()}
    batch = {name: reps_within(ms, BATCH_MS, 1, BATCH) for name, ms in per_call.items()}
    least = {name: reps_within(ms, MIN_REPS_MS, LEAST_REPS, MIN_REPS) for name, ms in per_call.items()}
    if probe is not None:
        slowest = max((ms for ms in per_call.values() if ms), default=None)
        probe.arm(reps_within(slowest, BUDGET_S * 1e3, LEAST_REPS, MAX_REPS))
    names = list(variants)
    samples: dict[str, list[float]] = {name: [] for name in names}
    medians: dict[str, float | None] = {name: None for name in names}
    stable: dict[str, bool] = {name: False for name in names}
    spent: dict[str, float] = {name: 0.0 for name in names}
    rounds = 0
    spent_all = False
    while not all(stable.values()) or (probe is not None and probe.pending and not spent_all):
        first = rounds % len(names)
        spent_all = True
        for name in names[first:] + names[:first]:
            if len(samples[name]) >= MAX_REPS or spent[name] > BUDGET_S:
                stable[name] = True  # out of budget: reported as it stands
                continue
            spent_all = False
            begin = time.perf_counter()
            samples[name] += timer.batch(variants[name], batch[name])
            spent[name] += time.perf_counter() - begin
            stable[name] = converged(samples[name], medians[name], least[name])
            medians[name] = statistics.median(samples[name])
        rounds += 1
    timings = []
    for name, fn in variants.items():
        timing = summarize(name, group, samples[name], stable=True)
        if timing.median_ms and timing.iqr_ms / timing.median_ms > WIDE_SPREAD:
            timing = summarize(name, group, timer.batch(fn, max(least[name], len(samples[name]))), stable=True)
            if timing.iqr_ms / timing.median_ms > WIDE_SPREAD:
                timing = dataclasses.replace(timing, stable=False, note="spread too wide (IQR over 30% of median)")
        timings.append(timing)
    return timings


def side_stream_ratio(timer: EventTimer, fn: Callable[[], Any], reps: int = 20, call_ms: float | None = None) -> float:
    """Median time of calls from an empty queue with a device-wide sync inside the timed region, less
    the sync's round trip, over the median of the same calls without the sync.

    Both batches start each call from an empty queue. Otherwise the timed batch would hide a slow
    host's launches behind the device's queue while the synced one cannot, and on a host shared by
    several runs that difference alone reads 1.5x for honest kernels. The round trip (the host
    waking from the sync) is timed on a function that launches nothing. What is left is work still
    running when the call returns that the timed stream never waited for: work on another stream.
    Host time is not subtracted: a side stream's kernels run while the host is still launching, so
    subtracting it would hide them (20 side-stream launches then read no slower than honest work).
    `call_ms`, where known: fewer than `reps` calls for a slow `fn` (`reps_within`).
    """
    reps = reps_within(call_ms, SIDE_STREAM_MS, LEAST_REPS, reps)
    cold = statistics.median(timer.batch(fn, reps, cold=True))
    synced = statistics.median(timer.batch(fn, reps, sync_inside=True))
    round_trip = statistics.median(timer.batch(_nothing, reps, sync_inside=True)) - statistics.median(
        timer.batch(_nothing, reps, cold=True)
    )
    return max(synced - max(round_trip, 0.0), cold) / cold if cold > 0 else 1.0


def escaped_calls(
    timer: EventTimer, fn: Callable[[], Any], streams: list, reps: int = 5, call_ms: float | None = None
) -> int:
    """Of `reps` calls of `fn`, how many left work on a stream its Triton kernels were launched on
    (`streams`, filled by `instrument.streams_noted`) after the timed stream's work was done.

    An honest call that runs kernels on another stream makes the timed stream wait for them
    (`wait_stream`, an event), so they are done when the timed stream is; work that escapes the
    timer is still there. `call_ms`, where known: fewer than `reps` calls for a slow `fn` (`reps_within`).
    """
    reps = reps_within(call_ms, SIDE_STREAM_MS, LEAST_REPS, reps)
    timed = timer.backend.current_stream()
    escaped = 0
    for _ in range(reps):
        timer.backend.synchronize()
        streams.clear()
        fn()
        done = timer.backend.Event()
        done.record()
        done.synchronize()
        escaped += any(s != timed and not s.query() for s in streams)
    timer.backend.synchronize()
    return escaped


def _nothing() -> None:
    return None
