"""The timing loop's decisions (convergence, spread, interleaving) on a timer that yields set samples.

The timer here is a real object with the `EventTimer` interface whose samples come from a list: the
protocol's arithmetic and stopping rules are what is under test, not a device.
"""

import itertools

from diagnose.verify import timing


class ListTimer:
    def __init__(self, samples: dict):
        self.samples = {k: itertools.cycle(v) for k, v in samples.items()}
        self.calls = []

    def warm_up(self, fn):
        fn()

    def batch(self, fn, reps, sync_inside=False):
        name = fn()
        self.calls.append(name)
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
