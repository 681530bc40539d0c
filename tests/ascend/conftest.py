"""The Ascend toolchain, built once per test session, and the corpus compiled once per target.

`ascend_toolchain` (package-scoped, so made once per session) finds the toolchain recorded in
`TOOLCHAIN_ROOT` (outside the checkout: `DIAGNOSE_TEST_TOOLCHAINS`, else a folder in the system's
temporary directory; the run's header says which) and reuses it when its probe still passes;
otherwise it builds it there (pip, from the registry, with pip's own wheel cache), holding a lock so
that parallel test workers build it once. A
failed build fails every test that needs it, loudly: CI must not pass on a toolchain it could not
make. Everything else the tests write goes to a fresh cache of the session, which gets a copy of
the toolchain's record so that `inspect_ascend` finds the same environment.
"""

from __future__ import annotations

import fcntl
import functools
import json
import re
from pathlib import Path

import pytest

from tests.conftest import TOOLCHAIN_ROOT

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "ascend"
TARGETS = ("ascend:910b", "ascend:950")
PREFIX = {"ascend:910b": "A910B", "ascend:950": "A950"}
# `# targets: ascend:950` in a fixture limits it to those targets.
TARGETS_LINE = re.compile(r"^# targets: (.+)$", re.MULTILINE)


@pytest.fixture(scope="package")
def ascend_toolchain(tmp_path_factory):
    """The Ascend toolchain's record, made or reused in `TOOLCHAIN_ROOT`; a cache of our own for
    everything else, for as long as tests/ascend runs (package scope: one build per session, and
    `DIAGNOSE_CACHE_DIR` is restored before other packages' tests)."""
    from diagnose.errors import ToolchainError
    from diagnose.toolchain import ensure
    from diagnose.toolchain.config import save_record

    TOOLCHAIN_ROOT.mkdir(parents=True, exist_ok=True)
    try:
        with open(TOOLCHAIN_ROOT / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            record, _made = ensure("ascend", TOOLCHAIN_ROOT)
    except ToolchainError as e:
        pytest.fail(f"could not set up the Ascend toolchain in {TOOLCHAIN_ROOT}:\n{e}", pytrace=False)
    session_cache = tmp_path_factory.mktemp("diagnose_cache")
    save_record(record, session_cache)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIAGNOSE_CACHE_DIR", str(session_cache))
        yield record


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.py") if not p.name.startswith("_"))


def fixture_targets(path: Path) -> tuple[str, ...]:
    m = TARGETS_LINE.search(path.read_text())
    return tuple(t.strip() for t in m[1].split(",")) if m else TARGETS


@functools.cache
def corpus(target: str, python: str) -> dict[str, dict]:
    """Every fixture compiled for `target` with per-pass IR, in one worker: stem -> worker result."""
    from diagnose.toolchain import call
    from diagnose.toolchain.specs import spec_for

    paths = [str(p) for p in fixture_files() if target in fixture_targets(p)]
    result = call(
        "diagnose.ascend.worker:inspect_files",
        {"paths": paths, "target": target, "passes": True},
        python=python,
        timeout_s=600,
        env=dict(spec_for("ascend").worker_env),
    )
    assert result.ok, f"{result.failure}\n{result.log}"
    out = {}
    for path, res in zip(paths, result.value["results"]):
        assert "error" not in res, f"{path}: {res['error']}"
        out[Path(path).stem] = res
    return out


@functools.cache
def facts(stem: str, target: str, python: str) -> tuple:
    """((kernel entry, [Evidence]), ...) for one fixture on one target."""
    from diagnose.ascend.facts import AscendFactContext, facts_for
    from diagnose.targets import lookup

    res = corpus(target, python)[stem]
    return tuple((k, facts_for(AscendFactContext(k, lookup(target), k["source_path"]))) for k in res["kernels"])


def facts_dump(stem: str, target: str, python: str) -> str:
    """The text FileCheck reads: a header per launch, then one `str(evidence)` per line, paths by name."""
    lines = []
    for kernel, evidence in facts(stem, target, python):
        lines.append(f"== {kernel['title']}")
        for e in evidence:
            lines.append(str(e).replace(str(FIXTURES) + "/", ""))
    return "\n".join(lines) + "\n"


def dump_json(obj) -> str:
    return json.dumps(obj, indent=1, default=str)
