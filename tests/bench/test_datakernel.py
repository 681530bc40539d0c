"""DataKernelBench: every TorchPlan against DuckDB's answer at SF 0.01 (data generated once per test
session into a temporary folder: `tests/bench/conftest.py`), and the data folder's and oracle's own rules."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from diagnose.bench.suites import datakernel_data as data
from diagnose.errors import UsageError

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "datakernel"
QUERIES = data.query_files(SUITE)


def test_the_suite_has_the_22_queries():
    assert [p.stem for p in QUERIES] == [f"q{i:02d}" for i in range(1, 23)]


@pytest.mark.parametrize("path", QUERIES, ids=[p.stem for p in QUERIES])
def test_torchplan_matches_duckdb(path, tpch):
    result = data.validate(path, tpch)
    assert result.ok, f"{path.stem}: {result.detail}"


def test_the_data_folder_is_reused(tpch):
    said = []
    assert data.dataset(0.01, tpch.parent, progress=said.append) == tpch
    assert said == []  # nothing generated again


def test_an_unknown_scale_factor_is_one_line():
    with pytest.raises(UsageError, match="unknown scale factor --sf 0.02"):
        data.check_scale(0.02)


def test_a_missing_package_is_one_line(monkeypatch):
    real = data.importlib.util.find_spec
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda name: None if name == "duckdb" else real(name))
    with pytest.raises(UsageError, match=r"pip install 'diagnose\[datakernel\]' \(duckdb is not installed\)"):
        data.require()


def test_the_data_root_follows_its_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(data.ROOT_ENV, str(tmp_path))
    assert data.data_root() == tmp_path


def test_comparison_is_exact_for_keys_and_relative_for_sums():
    day = datetime.date(1995, 3, 15)
    theirs = [("A", 3, day, Decimal("1000000.01"))]
    assert data.compare([("A", 3, day, 1000000.01 * (1 + 5e-10))], theirs).ok
    assert not data.compare([("A", 3, day, 1000000.01 * (1 + 5e-9))], theirs).ok
    assert not data.compare([("A", 4, day, 1000000.01)], theirs).ok
    assert not data.compare([("B", 3, day, 1000000.01)], theirs).ok


def test_rows_tied_under_order_by_match_in_any_order():
    result = data.compare([(1, 5.0), (2, 5.0)], [(2, 5.0), (1, 5.0)])
    assert result.ok and result.tie_order
    assert not data.compare([(1, 5.0)], [(1, 5.0), (2, 5.0)]).ok
