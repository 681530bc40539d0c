"""Shared test helpers: paths to the fixtures and examples, a CLI runner over real subprocesses, and a
private user cache for the session (runs go there by default)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"
# The Ascend toolchain the tests/ascend tests need (triton-ascend and a CPU torch, ~1.2 GB): made on
# first use, outside the checkout, and kept for later runs on this machine.
TOOLCHAIN_ROOT = Path(
    os.environ.get("DIAGNOSE_TEST_TOOLCHAINS") or Path(tempfile.gettempdir()) / "diagnose-test-toolchains"
)


def pytest_report_header(config) -> str:
    return f"Ascend toolchain for tests/ascend (made there on first use, ~1.2 GB): {TOOLCHAIN_ROOT}"


def pytest_collection_modifyitems(config, items) -> None:
    """A test that needs the Ascend toolchain is `slow`: the default run never makes the environment."""
    for item in items:
        if "ascend_toolchain" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


def run_cli(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `diagnose ...` as a user would, in a subprocess, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "diagnose.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def run_cli_here(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `diagnose ...` inside this test process, from the repository root, with `env` on top of this
    process's environment while it runs; the workers it starts to run kernels are subprocesses as always.
    For tests that run many commands over one project: each `run_cli` pays a fresh interpreter, its
    imports and a fresh zygote (3-4 s of CPU), while here torch is imported once and the zygotes stay
    warm between commands. Exit code, stdout and stderr come back as from `run_cli`."""
    from typer.testing import CliRunner

    from diagnose.cli import app

    with pytest.MonkeyPatch.context() as mp:
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        mp.chdir(ROOT)
        done = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return subprocess.CompletedProcess(list(args), done.exit_code, done.stdout, done.stderr)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory):
    """The user cache (where runs go by default) of the whole session: never the developer's own.
    Subprocesses inherit it; tests that need an empty one set `DIAGNOSE_CACHE_DIR` themselves."""
    root = tmp_path_factory.mktemp("xdg_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(root))
        yield root / "diagnose"


MODULE_PROJECT = FIXTURES / "modules" / "project"


@pytest.fixture(scope="session")
def captured_project(tmp_path_factory):
    """A copy of the fixture project of kernel modules, its launches captured from its own tests (run
    on the CPU): (project folder, the capture's completed process)."""
    import shutil

    project = tmp_path_factory.mktemp("captured") / "project"
    shutil.copytree(MODULE_PROJECT, project)
    done = run_cli(
        "capture",
        "--device",
        "cpu",
        "--project",
        str(project),
        "--",
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "check_ops.py",
    )
    return project, done
