"""Shared fixtures of the rewrite tests: one IR cache for the session, verifications run in parallel."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# Interpreter verifications: two seeds (the input-sensitivity check needs a pair), a short soak.
SEEDS = (0, 1)
SOAK = 2


@pytest.fixture(scope="session", autouse=True)
def rewrite_cache(tmp_path_factory):
    """One cache for the whole session (compiles are shared between tests), never the developer's."""
    root = os.environ.get("DIAGNOSE_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("diagnose_cache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIAGNOSE_CACHE_DIR", root)
        yield Path(root)


def check_options(initial: Path):
    from diagnose.verify.harness import CheckOptions

    return CheckOptions(device="cpu", seeds=SEEDS, soak=SOAK, initial=initial)


def verify_pairs(pairs: list[tuple[Path, Path]]) -> list:
    """Verdicts of (original task, candidate file) pairs on the interpreter, two workers at a time."""
    from diagnose.task import load_task
    from diagnose.verify.harness import verify

    def one(pair):
        original, candidate = pair
        return verify(load_task(original, candidate), check_options(original))

    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        return list(pool.map(one, pairs))
