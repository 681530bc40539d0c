"""The ceilings cache: keyed by device, driver and library versions; a hit never measures again."""

from __future__ import annotations

from dataclasses import replace

from diagnose.profiling import ceilings

IDENTITY = {
    "device": "NVIDIA H200",
    "sms": "132",
    "capability": "9.0",
    "driver": "580.159.04",
    "torch": "2.11.0+cu130",
    "cuda": "13.0",
    "triton": "3.6.0",
}
MEASURED = ceilings.Ceilings(
    "NVIDIA H200",
    4.28e12,
    (("bf16", 7.2e14), ("fp16", 7.0e14), ("tf32", 3.7e14), ("fp32", 5e13)),
    5.1e-6,
    True,
    "measured: test",
)


def test_key_changes_with_every_part_of_the_identity():
    base = ceilings.cache_key(IDENTITY)
    assert base == ceilings.cache_key(dict(reversed(list(IDENTITY.items()))))  # order does not matter
    for field, text in IDENTITY.items():
        assert ceilings.cache_key({**IDENTITY, field: text + "x"}) != base, field


def test_store_and_load(tmp_path):
    stored = replace(MEASURED, identity=tuple(sorted(IDENTITY.items())))
    path = ceilings.store(stored, tmp_path)
    assert path.parent == tmp_path / "profiling" / "ceilings"
    assert ceilings.load_cached(IDENTITY, tmp_path) == stored
    assert ceilings.load_cached({**IDENTITY, "driver": "590.1"}, tmp_path) is None


def test_default_root_honours_the_environment(tmp_path, monkeypatch):
    # Its own variable: the session-wide caches of several conftests nest, and the last one set wins.
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path))
    assert ceilings.cache_dir() == tmp_path / "profiling" / "ceilings"


def test_measures_once_then_reads_the_cache(tmp_path, monkeypatch):
    calls = []
    identity = dict(IDENTITY)
    monkeypatch.setattr(ceilings, "identity", lambda device: dict(identity))
    monkeypatch.setattr(ceilings, "measure", lambda device: calls.append(device) or MEASURED)
    first, hit = ceilings.cached_or_measured("cuda", tmp_path)
    assert not hit and calls == ["cuda"] and dict(first.identity) == IDENTITY
    second, hit = ceilings.cached_or_measured("cuda", tmp_path)
    assert hit and calls == ["cuda"] and second == first
    identity["driver"] = "590.1"  # a new driver measures again
    _, hit = ceilings.cached_or_measured("cuda", tmp_path)
    assert not hit and len(calls) == 2
    _, hit = ceilings.cached_or_measured("cuda", tmp_path, refresh=True)
    assert not hit and len(calls) == 3


def test_job_entry_returns_json(tmp_path, monkeypatch):
    monkeypatch.setattr(ceilings, "identity", lambda device: dict(IDENTITY))
    monkeypatch.setattr(ceilings, "measure", lambda device: MEASURED)
    out = ceilings.ceilings_job({"device": "cuda", "cache_root": str(tmp_path)})
    assert out["from_cache"] is False and out["ceilings"]["copy_bytes_per_s"] == 4.28e12
    assert ceilings.ceilings_job({"device": "cuda", "cache_root": str(tmp_path)})["from_cache"] is True
