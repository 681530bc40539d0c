"""Roofline arithmetic: bounds, regimes, fractions, ridge points, nominal roofs from the target table."""

from __future__ import annotations

import pytest

from diagnose.profiling.ceilings import Ceilings, nominal
from diagnose.profiling.roofline import (
    COMPUTE_BOUND,
    MEMORY_BOUND,
    Roof,
    Work,
    bound,
    position,
    regime,
    roof_for,
)
from diagnose.targets import TARGETS

H200 = Ceilings(
    "NVIDIA H200",
    4.28e12,
    (("bf16", 722e12), ("fp16", 700e12), ("tf32", 370e12), ("fp32", 50e12)),
    5e-6,
    True,
    "measured",
)


def test_memory_bound_copy_like_task():
    # vector add of 2**28 fp32: 3 * 1 GiB moved, no FLOPs
    work = Work("n", 3 * 2**30, 0.0, "fp32", flops_source="none")
    roof = roof_for(H200, "fp32")
    p = position(work, roof, 1.27e-3)
    assert p.memory_s == pytest.approx(3 * 2**30 / 4.28e12)
    assert p.compute_s == 0.0 and p.bound_s == p.memory_s
    assert p.fraction == pytest.approx(p.memory_s / 1.27e-3)
    assert p.regime == MEMORY_BOUND and p.intensity == 0.0
    assert p.achieved_bytes_per_s == pytest.approx(3 * 2**30 / 1.27e-3)


def test_compute_bound_matmul():
    n = 4096
    work = Work("mm", 3 * n * n * 2, 2.0 * n**3, "fp16")
    roof = roof_for(H200, "fp16")
    memory, compute, best = bound(work, roof)
    assert compute == pytest.approx(2.0 * n**3 / 700e12) and best == compute > memory
    assert regime(work, roof) == COMPUTE_BOUND
    assert roof.ridge == pytest.approx(700e12 / 4.28e12)
    assert work.intensity > roof.ridge
    p = position(work, roof, 1.03e-3)
    assert p.fraction == pytest.approx(compute / 1.03e-3)
    assert p.achieved_flops_per_s == pytest.approx(2.0 * n**3 / 1.03e-3)


def test_fraction_above_one_is_reported_not_hidden():
    work = Work("g", 1e9, 0.0, "fp32")
    p = position(work, Roof(1e12, None, "fp32", False), 0.5e-3)
    assert p.fraction == pytest.approx(2.0)


def test_dtype_picks_the_rate_and_fp32_falls_back_to_tf32_only_without_fp32():
    assert H200.flops_per_s("bf16") == 722e12
    assert H200.flops_per_s("fp32") == 50e12
    no_fp32 = Ceilings("x", 1e12, (("tf32", 100e12),), None, False, "")
    assert no_fp32.flops_per_s("fp32") == 100e12
    assert no_fp32.flops_per_s("fp64") is None
    work = Work("g", 1e6, 1e12, "fp64")
    assert bound(work, roof_for(no_fp32, "fp64"))[1] == 0.0  # no rate: the memory term alone


def test_invalid_inputs():
    with pytest.raises(ValueError):
        position(Work("g", 1.0, 0.0, "fp32"), roof_for(H200, "fp32"), 0.0)
    with pytest.raises(ValueError):
        roof_for(Ceilings("no datasheet", None, (), None, False, "nominal"), "fp16")


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_nominal_roofs_come_from_the_target_table(name):
    target = TARGETS[name]
    c = nominal(target)
    assert not c.measured and c.source.startswith("nominal")
    assert c.copy_bytes_per_s == target.peaks.hbm_bytes_per_s
    if target.peaks.bf16_tflops:
        assert c.flops_per_s("bf16") == pytest.approx(target.peaks.bf16_tflops * 1e12)


def test_ceilings_round_trip_through_json():
    import json

    again = Ceilings.from_dict(json.loads(json.dumps(H200.to_dict())))
    assert again == H200
