"""The static estimate's sanity: monotone (a wider access or fewer passes never estimates slower),
labelled an estimate, and the features it reads from real IR."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.profiling.ceilings import Ceilings, nominal
from diagnose.profiling.static.estimate import estimate, hardware
from diagnose.profiling.static.features import WIDTH_EFFICIENCY, KernelFeatures, access_efficiency
from diagnose.targets import lookup

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ROOT / "benchmarks" / "profiling_variants"
H200 = hardware(
    Ceilings(
        "H200", 4.28e12, (("bf16", 722e12), ("fp16", 700e12), ("tf32", 370e12), ("fp32", 50e12)), 5e-6, True, "test"
    ),
    132,
)
WIDTHS = sorted(WIDTH_EFFICIENCY) + [None]

features = st.builds(
    KernelFeatures,
    kernel=st.just("k"),
    programs=st.integers(1, 2**22),
    num_warps=st.sampled_from([1, 2, 4, 8, 16]),
    num_stages=st.integers(1, 5),
    moved_bytes=st.floats(1e3, 1e11),
    unique_bytes=st.floats(1e3, 1e11),
    width_efficiency=st.floats(0.05, 1.0),
    inflight_bytes_per_program=st.floats(0, 1e6),
    resident_programs_per_sm=st.integers(1, 32),
    dot_flops=st.one_of(st.just(0.0), st.floats(1e6, 1e15)),
    dot_engine=st.sampled_from([None, "wgmma", "mma_v2", "fma"]),
    dot_dtype=st.sampled_from([None, "f16", "bf16", "f32"]),
)


def test_access_efficiency_never_falls_with_width():
    for coalesced in (True, False):
        known = [access_efficiency(w, coalesced) for w in sorted(WIDTH_EFFICIENCY)]
        assert known == sorted(known)
        assert access_efficiency(8, coalesced) <= access_efficiency(12, coalesced) <= access_efficiency(16, coalesced)
    assert access_efficiency(128, False) < access_efficiency(128, True)


@settings(max_examples=300, deadline=None)
@given(features, st.floats(0.0, 1.0))
def test_wider_access_never_estimates_slower(f, gain):
    wider = dataclasses.replace(f, width_efficiency=f.width_efficiency + gain * (1.0 - f.width_efficiency))
    assert estimate(wider, H200).time_s <= estimate(f, H200).time_s * (1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(features, st.floats(0.0, 1.0))
def test_fewer_passes_never_estimate_slower(f, keep):
    fewer = dataclasses.replace(f, moved_bytes=f.moved_bytes * keep)
    assert estimate(fewer, H200).time_s <= estimate(f, H200).time_s * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(features, st.floats(0.0, 1.0))
def test_more_bytes_in_flight_never_estimate_slower(f, extra):
    more = dataclasses.replace(f, inflight_bytes_per_program=f.inflight_bytes_per_program * (1 + extra))
    assert estimate(more, H200).time_s <= estimate(f, H200).time_s * (1 + 1e-12)


def test_estimate_is_labelled():
    f = KernelFeatures("k", 1024, 4, 3, 1e9, 1e9, 1.0, 8192, 16)
    e = estimate(f, H200)
    assert e.label == "estimate" and e.to_dict()["label"] == "estimate"
    assert e.time_s == max(e.memory_s, e.compute_s) + e.overhead_s


@functools.cache
def features_of(path: str, group: str | None = None) -> tuple[KernelFeatures, ...]:
    from diagnose.profiling import jobs
    from diagnose.profiling.profile import _features

    out = jobs.static_job(
        {"reference": path, "candidate": path, "groups": [group] if group else None, "target": "cuda:sm90"}
    )
    return tuple(_features(dict(k["features"])) for k in out["kernels"])


@pytest.mark.slow
def test_features_of_the_three_pass_softmax():
    (f,) = features_of(str(VARIANTS / "softmax_3pass_b256_w4.py"))
    assert f.programs == 16384 and f.num_warps == 4 and f.unknown_trips == 0
    assert f.unique_bytes == 2 * 16384 * 4096 * 4
    assert f.moved_bytes == 4 * 16384 * 4096 * 4  # three reads of the row and one write
    assert f.inflight_bytes_per_program == 256 * 4  # one BLOCK of fp32 per loop iteration


def test_features_of_the_example_matmul():
    (f,) = features_of(str(VARIANTS / "matmul_32x32x32_w4_s3.py"))
    n = 4096
    assert f.dot_flops == 2.0 * n**3 and f.dot_engine == "mma_v2" and f.dot_dtype == "f16"
    assert f.programs == (n // 32) ** 2
    assert f.moved_bytes == f.programs * ((n // 32) * 2 * 32 * 32 * 2 + 32 * 32 * 2)
    assert f.inflight_bytes_per_program == 2 * 32 * 32 * 2 * 2  # two tiles, two buffers (cp.async)


@pytest.mark.slow
def test_real_ir_fewer_passes_never_slower():
    """Same BLOCK, warps and width: one pass over the row against three."""
    target = lookup("cuda:sm90")
    hw = hardware(nominal(target), target.sm_count)
    (three,) = features_of(str(VARIANTS / "softmax_3pass_b4096_w8.py"))
    (one,) = features_of(str(VARIANTS / "softmax_1pass_b4096_w8.py"))
    assert one.moved_bytes < three.moved_bytes and one.width_efficiency == three.width_efficiency
    assert estimate(one, hw).time_s <= estimate(three, hw).time_s
    (two,) = features_of(str(VARIANTS / "layernorm_2pass_b1024_w4.py"))
    (three,) = features_of(str(VARIANTS / "layernorm_3pass_b1024_w4.py"))
    assert two.moved_bytes < three.moved_bytes
    assert estimate(two, hw).time_s <= estimate(three, hw).time_s


def test_real_ir_wider_access_never_slower(tmp_path):
    """The same vector add with a row length the compiler can (n % 16 == 0) or cannot vectorize."""
    text = (VARIANTS / "vector_add_b1024_w4.py").read_text()
    for name, n in (("aligned", "2**20"), ("odd", "2**20 + 3")):
        (tmp_path / f"{name}.py").write_text(text.replace("2**26", n))
    (wide,) = features_of(str(tmp_path / "aligned.py"), "n_2e26")
    (narrow,) = features_of(str(tmp_path / "odd.py"), "n_2e26")
    assert wide.width_efficiency > narrow.width_efficiency
    assert estimate(wide, H200).time_s <= estimate(narrow, H200).time_s
