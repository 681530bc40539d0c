"""Shared, session-scoped compiles for the IR tests: each (fixture, target) compiles once."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ir"
TARGETS = ("cuda:sm90", "hip:gfx942")


@pytest.fixture(scope="session", autouse=True)
def ir_cache(tmp_path_factory):
    """One cache for the whole session (so tests share compiles), never the developer's."""
    root = os.environ.get("DIAGNOSE_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("diagnose_cache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIAGNOSE_CACHE_DIR", root)
        yield Path(root)


@functools.cache
def compiled(fixture: str, target: str, snapshots: bool = False) -> tuple:
    """((ConcreteLaunch, CompileRecord), ...) for every launch of a fixture file."""
    from diagnose.ir.compile import compile_launch
    from diagnose.ir.launch import collect_launches
    from diagnose.ir.specialize import expand_configs
    from diagnose.targets import lookup

    out = []
    for launch in collect_launches(str(FIXTURES / f"{fixture}.py")):
        for concrete in expand_configs(launch):
            out.append((concrete, compile_launch(concrete, lookup(target), snapshots=snapshots)))
    return tuple(out)


@functools.cache
def facts(fixture: str, target: str) -> tuple:
    """((ConcreteLaunch, [Evidence]), ...) for a fixture file."""
    from diagnose.ir.facts import FactContext, facts_for
    from diagnose.targets import lookup

    return tuple(
        (c, facts_for(FactContext(r, lookup(target), c.grid, c.jit.fn.__code__.co_filename)))
        for c, r in compiled(fixture, target)
    )


def facts_dump(fixture: str, target: str) -> str:
    """The text FileCheck reads: a header per launch, then one `str(evidence)` per line, paths by name."""
    lines = []
    for concrete, evidence in facts(fixture, target):
        lines.append(f"== {concrete.title}")
        for e in evidence:
            lines.append(str(e).replace(str(FIXTURES) + "/", ""))
    return "\n".join(lines) + "\n"
