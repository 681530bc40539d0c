"""The timing loop's decisions (convergence, spread, interleaving) on a timer that yields set samples.

The timer here is a real object with the `EventTimer` interface whose samples come from a list: the
protocol's arithmetic and stopping rules are what is under test, not a device.
"""

import itertools

from diagnose.verify import timing


class ListTimer:
    """`call_ms`: what the warm-up says a variant's call takes (by default nothing: counts as fast)."""

    def __init__(self, samples: dict, call_ms: dict | None = None):
        self.samples = {k: itertools.cycle(v) for k, v in samples.items()}
        self.call_ms = call_ms or {}
        self.calls = []
        self.reps = []

    def warm_up(self, fn):
        return self.call_ms.get(fn())

    def batch(self, fn, reps, sync_inside=False):
        name = fn()
        self.calls.append(name)
        self.reps.append((name, reps))
        return [next(self.samples[name]) for _ in range(reps)]


def test_summary_quantiles_and_cv():
    t = timing.summarize("candidate", "g", [1.0, 2.0, 3.0, 4.0, 5.0], stable=True)
    assert t.median_ms == 3.0 and t.p20_ms == 1.8 and t.p80_ms == 4.2
    assert t.iqr_ms == 2.0 and round(t.cv, 3) == 0.471 and t.reps == 5


def test_variants_are_interleaved_and_stop_when_stable():
    timer = ListTimer({"a": [1.0], "b": [2.0, 2.02]})
    out = timing.measure(timer, {"a": lambda: "a", "b": lambda: "b"}, "g")
    by_name = {t.variant: t for t in out}
    assert by_name["a"].median_ms == 1.0 and by_name["b"].median_ms == 2.01
    assert all(t.stable for t in out)
    # interleaved, the first of each round rotating: a b, then b a, ...
    assert timer.calls[:4] == ["a", "b", "b", "a"]


def test_every_variant_is_timed_in_every_round_until_all_are_stable():
    """A variant stable at once keeps its place in the rounds while another settles (six rounds
    here), so every variant goes first as often as the others."""
    timer = ListTimer({"a": [1.0], "b": [2.0] * 10 + [3.0] * 20})
    timing.measure(timer, {"a": lambda: "a", "b": lambda: "b"}, "g")
    assert timer.calls[:12] == ["a", "b", "b", "a"] * 3


def test_wide_spread_is_flagged_unstable():
    timer = ListTimer({"a": [1.0, 1.0, 5.0, 5.0]})
    (t,) = timing.measure(timer, {"a": lambda: "a"}, "g")
    assert not t.stable and "spread" in t.note


def test_convergence_needs_enough_samples():
    assert not timing.converged([1.0] * 5, 1.0)
    assert timing.converged([1.0] * 10, 1.005)
    assert not timing.converged([1.0] * 10, 1.5)


def test_a_slow_call_is_timed_in_batches_of_one_and_three_samples_do():
    """A call of seconds (a full query reading Parquet) would spend minutes on ten-call batches; one of
    milliseconds beside it keeps the usual counts."""
    timer = ListTimer({"slow": [3000.0], "fast": [1.0]}, call_ms={"slow": 3000.0, "fast": 1.0})
    out = {t.variant: t for t in timing.measure(timer, {"slow": lambda: "slow", "fast": lambda: "fast"}, "g")}
    slow = [reps for name, reps in timer.reps if name == "slow"]
    assert set(slow) == {1} and out["slow"].reps == len(slow) == timing.LEAST_REPS
    assert {reps for name, reps in timer.reps if name == "fast"} == {timing.BATCH}
    assert out["slow"].median_ms == 3000.0 and out["slow"].stable


def test_repetitions_fit_the_budget_between_their_floor_and_ceiling():
    assert timing.reps_within(None, 2000.0, 3, 20) == 20  # not known: the usual count
    assert timing.reps_within(0.5, 2000.0, 3, 20) == 20
    assert timing.reps_within(250.0, 2000.0, 3, 20) == 8
    assert timing.reps_within(5000.0, 2000.0, 3, 20) == 3


def test_the_timed_recheck_falls_among_the_calls_the_budget_leaves():
    from diagnose.verify.timing_jobs import RECHECK_WITHIN, TimedRecheck

    recheck = TimedRecheck(lambda: None, [], lambda: [])
    for _ in range(50):
        recheck.arm(2)
        assert recheck.countdown in (1, 2)
    recheck.arm(10_000)
    assert 1 <= recheck.countdown <= RECHECK_WITHIN
