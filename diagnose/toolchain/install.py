"""Making a toolchain's environment, probing it, and reusing one that still works.

`create(spec)`:
1. `python3.11 -m venv <cache>/toolchains/<name>/venv` (the interpreter version the wheels need:
   this Python when it matches, else `python3.X` from `PATH`);
2. one `pip install` of the spec's requirements from the package registry (pip's own cache keeps the
   wheels, so a second machine setup downloads nothing), plus torch_npu where CANN is installed;
3. if a foreign distribution also installed the toolchain's package (upstream `triton` as a
   dependency of a CUDA torch wheel), it is uninstalled and the main distribution reinstalled over it;
4. the spec's probe runs in the new environment (`runner.call`); only a working environment is
   recorded in `toolchains.json`.

`ensure(name)` returns the recorded environment when its probe still passes, and makes it otherwise.
Failures raise `ToolchainError` with the failing command and the tail of its output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from diagnose.errors import ToolchainError
from diagnose.toolchain.config import (
    ToolchainRecord,
    find_record,
    save_record,
    toolchains_dir,
)
from diagnose.toolchain.runner import call
from diagnose.toolchain.specs import ToolchainSpec, spec_for

VENV_TIMEOUT_S = 300
PIP_TIMEOUT_S = 1200
PROBE_TIMEOUT_S = 300
TAIL = 3000


def base_interpreter(spec: ToolchainSpec) -> str:
    """A Python of the spec's version to build the environment from."""
    major, minor = spec.python_version
    if sys.version_info[:2] == (major, minor):
        return sys.executable
    found = shutil.which(f"python{major}.{minor}")
    if found is None:
        raise ToolchainError(
            f"toolchain {spec.name} needs Python {major}.{minor} (its wheels are built for it only); "
            f"none found: this is Python {sys.version_info[0]}.{sys.version_info[1]} and python{major}.{minor} is not on PATH"
        )
    return found


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def run_step(command: list[str], timeout_s: float, what: str) -> str:
    """Run one setup command; its output, or `ToolchainError` with a reproducer and the output's tail."""
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise ToolchainError(f"{what} did not finish within {timeout_s:g} s: {' '.join(command)}") from e
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0:
        raise ToolchainError(
            f"{what} failed (exit {proc.returncode}); rerun with:\n  {' '.join(command)}\n{output[-TAIL:]}"
        )
    return output


def cann_installed() -> bool:
    """The CANN toolkit announces itself through `ASCEND_HOME_PATH` (its `set_env.sh` exports it)."""
    return bool(os.environ.get("ASCEND_HOME_PATH"))


def requirements(spec: ToolchainSpec) -> tuple[str, ...]:
    return spec.requirements + (spec.npu_requirements if cann_installed() else ())


def installed_distributions(python: Path, names: tuple[str, ...]) -> list[str]:
    """Which of `names` are installed as distributions in the environment of `python`."""
    script = (
        "import importlib.metadata as m, sys\n"
        "for n in sys.argv[1:]:\n"
        "    try: m.distribution(n); print(n)\n"
        "    except m.PackageNotFoundError: pass\n"
    )
    return run_step([str(python), "-c", script, *names], 120, "listing distributions").split()


def probe(spec: ToolchainSpec, python: str) -> dict:
    """Run the spec's probe in the environment; its report, or `ToolchainError` saying why not."""
    result = call(spec.probe, {}, python=python, timeout_s=PROBE_TIMEOUT_S, env=dict(spec.worker_env), user_code=False)
    if not result.ok:
        raise ToolchainError(
            f"toolchain {spec.name}: the probe failed in {python} ({result.failure.kind}): {result.failure.message}\n"
            f"{result.failure.log_tail[-TAIL:]}"
        )
    return result.value


def create(spec: ToolchainSpec, root: Path | None = None) -> ToolchainRecord:
    """Build the environment from scratch and record it (see the module docstring)."""
    start = time.monotonic()
    venv = toolchains_dir(spec.name, root) / "venv"
    if venv.exists():
        shutil.rmtree(venv)  # a half-built or broken environment from an earlier attempt
    venv.parent.mkdir(parents=True, exist_ok=True)
    run_step([base_interpreter(spec), "-m", "venv", str(venv)], VENV_TIMEOUT_S, "creating the virtual environment")
    python = venv_python(venv)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"]
    wanted = requirements(spec)
    run_step(pip + list(wanted), PIP_TIMEOUT_S, f"pip install {' '.join(wanted)}")
    foreign = installed_distributions(python, spec.foreign_distributions)
    if foreign:
        run_step(
            [str(python), "-m", "pip", "uninstall", "-y", *foreign], PIP_TIMEOUT_S, f"pip uninstall {' '.join(foreign)}"
        )
        main = next(r for r in wanted if r.startswith(spec.main_distribution))
        run_step(pip + ["--no-deps", "--force-reinstall", main], PIP_TIMEOUT_S, f"reinstalling {main}")
    report = probe(spec, str(python))
    if not report.get("ok"):
        raise ToolchainError(
            f"toolchain {spec.name} was installed but does not work: {'; '.join(report.get('problems', []))}"
        )
    record = ToolchainRecord(
        name=spec.name,
        python=str(python),
        venv=str(venv),
        requirements=wanted,
        versions=tuple(sorted((k, v) for k, v in report.get("versions", {}).items() if v)),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        setup_seconds=round(time.monotonic() - start, 1),
        capabilities=report,
    )
    save_record(record, root)
    return record


def ensure(name: str, root: Path | None = None, rebuild: bool = False) -> tuple[ToolchainRecord, bool]:
    """(record, made): the recorded environment if it still probes fine, else a new one."""
    spec = spec_for(name)
    record = None if rebuild else find_record(name, root)
    if record is not None:
        try:
            report = probe(spec, record.python)
        except ToolchainError:
            report = None  # broken (deleted packages, another Python): build it again
        if report is not None and report.get("ok"):
            # The machine may have changed since (a CANN install): keep what the probe says now.
            refreshed = ToolchainRecord(**{**record.__dict__, "capabilities": report})
            save_record(refreshed, root)
            return refreshed, False
    return create(spec, root), True
