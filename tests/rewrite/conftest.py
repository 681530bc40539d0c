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


def fixture_module_task(folder: Path, tmp_path: Path, style: str, call: str):
    """The task file `optimize` makes of a fixture's `before_<style>.py` for `call` (the module copied,
    as a user's)."""
    import shutil

    from diagnose.task import load_task
    from diagnose.task.specs import Inputs

    module = tmp_path / f"{style}_ops.py"
    shutil.copy(folder / f"before_{style}.py", module)
    return load_task(module, inputs=Inputs(calls=(call,)), cache=tmp_path / "cache")


def verify_module_styles(folder: Path, calls: dict[str, str], tmp_path: Path) -> dict:
    """Verdicts of each `after_<style>.py` of a rewrite's fixture folder against its `before_<style>.py`
    (copied, as a user's module), replaying `calls[style]`, on the interpreter, two at a time."""
    import shutil

    from diagnose.task import load_task
    from diagnose.task.specs import Inputs
    from diagnose.verify.harness import verify

    def one(style: str):
        module = tmp_path / f"{style}_ops.py"
        shutil.copy(folder / f"before_{style}.py", module)
        task = load_task(module, folder / f"after_{style}.py", Inputs(calls=(calls[style],)), tmp_path / "cache")
        return style, verify(task, check_options(task.reference_path))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, calls))
