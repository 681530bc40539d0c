"""The NPUKernelBench-derived suite: its shape, and every entry passing verification on the CPU interpreter."""

from collections import Counter

import pytest

from diagnose.bench import store
from diagnose.bench.suite import load_suite
from diagnose.bench.sweep import SweepOptions, sweep
from tests.conftest import ROOT

SUITE = ROOT / "benchmarks" / "npukernel"


def test_suite_spans_levels_and_categories():
    entries = load_suite(SUITE)
    assert len(entries) >= 40
    levels = Counter(e.level for e in entries)
    assert set(levels) == {1, 2, 3}
    categories = {e.category for e in entries}
    for wanted in (
        "math",
        "comparison",
        "condition",
        "index",
        "creation",
        "activation",
        "foreach",
        "norm",
        "loss",
        "mask",
        "optim",
        "reduce",
        "tensor_move",
        "matmul",
        "attention",
        "sort",
    ):
        assert wanted in categories, wanted


# The suite in four parts of similar cost, so that the test runner spreads them over its workers (one
# 70 s test was the tail of the whole run); `test_the_parts_cover_the_suite` keeps every entry in one.
PARTS = [
    "level1/",
    "level2/activation_,level2/foreach_,level2/loss_,level2/mask_",
    "level2/norm_,level2/optim_,level2/reduce_,level2/tensor_move_",
    "level3/",
]


def test_the_parts_cover_the_suite():
    ids = [e.id for part in PARTS for e in load_suite(SUITE, part)]
    assert sorted(ids) == sorted(e.id for e in load_suite(SUITE)) and len(ids) == len(set(ids))


@pytest.mark.slow
@pytest.mark.parametrize("part", PARTS)
def test_every_entry_passes_check_on_the_interpreter(tmp_path, part):
    db = tmp_path / "suite.sqlite"
    summary = sweep(SUITE, db, SweepOptions(device="cpu", jobs=1, seeds=2, timeout_s=120, pattern=part))
    rows = store.rows(store.connect(db))
    failed = [(r.entry, r.group, r.data) for r in rows if r.status != "passed"]
    assert not failed, failed
    assert summary.failed == 0 and summary.ran == len(load_suite(SUITE, part))


def test_filter_takes_several_comma_separated_parts():
    ids = [e.id for e in load_suite(SUITE, "gemv,level3/attention,norm_rms")]
    assert ids == ["level2/norm_rms_norm", "level3/attention", "level3/gemv"]
    assert [e.id for e in load_suite(SUITE, "level1/math_*")] == [e.id for e in load_suite(SUITE, "math_")]
