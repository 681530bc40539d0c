"""Shared by the bench tests: DataKernelBench's TPC-H data at SF 0.01, generated once per session."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tpch_root(tmp_path_factory) -> Path:
    """The data root holding `sf0.01/` (what `DIAGNOSE_DATAKERNEL_DIR` names for the adapter)."""
    from diagnose.bench.suites import datakernel_data

    root = tmp_path_factory.mktemp("datakernel")
    datakernel_data.dataset(0.01, root)
    return root


@pytest.fixture(scope="session")
def tpch(tpch_root) -> Path:
    """SF 0.01 as Parquet files."""
    return tpch_root / "sf0.01"
