"""Shared fixtures for the profiling tests: a private cache, paths to the fixture pages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "profiling"
NCU = FIXTURES / "ncu"
ASCEND = FIXTURES / "ascend"


@pytest.fixture(scope="session", autouse=True)
def profiling_cache(tmp_path_factory):
    """One cache for the session (compiles are shared between tests), never the developer's."""
    root = os.environ.get("DIAGNOSE_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("diagnose_cache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIAGNOSE_CACHE_DIR", root)
        yield Path(root)
