"""The target registry."""

from __future__ import annotations

import dataclasses

import pytest

from diagnose.errors import UsageError
from diagnose.targets import DEFAULT_TARGET, TARGETS, lookup


def test_known_targets():
    assert set(TARGETS) == {
        "cuda:sm80",
        "cuda:sm90",
        "cuda:sm100",
        "hip:gfx942",
        "hip:gfx950",
        "ascend:910b",
        "ascend:950",
    }
    assert DEFAULT_TARGET == "cuda:sm90"


def test_h200_numbers():
    h200 = lookup("cuda:sm90")
    assert (h200.sm_count, h200.peaks.hbm_bytes_per_s, h200.l2_bytes) == (132, 4.8e12, 60 * 1024 * 1024)
    assert h200.peaks.nominal and "datasheet" in h200.peaks.source


def test_unknown_target_lists_the_known_ones():
    with pytest.raises(UsageError, match="known targets: cuda:sm80, cuda:sm90"):
        lookup("cuda:sm75")


def test_records_are_frozen_and_complete():
    for t in TARGETS.values():
        with pytest.raises(dataclasses.FrozenInstanceError):
            t.sm_count = 1  # type: ignore[misc]
        assert t.shared_per_block <= t.shared_per_sm and t.peaks.source
        assert t.can_compile_here == (t.backend in ("cuda", "hip"))


def test_gpu_targets():
    assert lookup("cuda:sm90").gpu_target().arch == 90
    assert lookup("hip:gfx942").gpu_target().warp_size == 64
