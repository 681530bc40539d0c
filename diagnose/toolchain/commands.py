"""`diagnose toolchain setup NAME` and `diagnose toolchain list`, as plain functions.

Both return (exit code, text for stdout). An unknown name raises `UsageError` (exit 2); a setup
that fails (registry unreachable, pip error, an environment that does not work) raises
`ToolchainError` (exit 3) with the failing command and the tail of its output.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from diagnose.errors import EXIT_OK
from diagnose.toolchain.config import ToolchainRecord, config_path, find_record
from diagnose.toolchain.install import ensure, requirements
from diagnose.toolchain.specs import TOOLCHAINS, spec_for


def toolchain_setup(name: str, rebuild: bool = False, root: Path | None = None) -> tuple[int, str]:
    """Make (or reuse, when it still works) the environment of toolchain `name` and record it."""
    spec = spec_for(name)
    record, made = ensure(spec.name, root, rebuild=rebuild)
    verb = f"set up in {record.setup_seconds:.1f} s" if made else "already set up and working (reused)"
    lines = [
        f"toolchain {spec.name}: {verb}",
        f"  environment  {record.venv}",
        f"  installed    {_versions(record)}",
        f"  recorded in  {config_path(root)}",
        *("  " + line for line in capability_lines(record)),
    ]
    return EXIT_OK, "\n".join(lines) + "\n"


def toolchain_list(root: Path | None = None) -> tuple[int, str]:
    """Every known toolchain: whether it is set up here, and what it can do here."""
    lines = [_main_environment()]
    for spec in TOOLCHAINS.values():
        record = find_record(spec.name, root)
        lines.append("")
        if record is None:
            lines.append(f"{spec.name}: not set up ({spec.description})")
            lines.append(f"  targets  {', '.join(spec.targets)}")
            lines.append(f"  set up with `diagnose toolchain setup {spec.name}` (pip: {' '.join(requirements(spec))})")
            continue
        lines.append(f"{spec.name}: set up {record.created}")
        lines.append(f"  python   {record.python}")
        lines.append(f"  versions {_versions(record)}")
        lines.append(f"  targets  {', '.join(spec.targets)}")
        lines += ["  " + line for line in capability_lines(record)]
    lines.append("")
    lines.append(f"config: {config_path(root)}")
    return EXIT_OK, "\n".join(lines) + "\n"


def capability_lines(record: ToolchainRecord) -> list[str]:
    """What the probe found the toolchain can do here: stages, and running (from its capabilities)."""
    caps = record.capabilities
    if not caps.get("ok"):
        return [f"broken: {'; '.join(caps.get('problems', [])) or 'the probe failed'}"]
    stages = [name for name, possible in caps.get("stages", {}).items() if possible]
    compiles = f"compiles to {', '.join(stages)}"
    if caps.get("npubin"):
        compiles += f"; npubin: not available here, {caps['npubin']}"
    runs = "runs on the Triton interpreter (CPU, TRITON_INTERPRET=1)"
    runs += f"; npu: {caps['npu_devices']} device(s)" if caps.get("npu") is None else f"; npu: not here, {caps['npu']}"
    timing = "timing: on the NPU" if caps.get("npu") is None else "timing: not possible here (no NPU)"
    return [compiles, runs, timing]


def _versions(record: ToolchainRecord) -> str:
    return ", ".join(f"{name} {version}" for name, version in record.versions)


def _main_environment() -> str:
    try:
        triton = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton = "not installed"
    return f"main environment: triton {triton} (targets cuda:*, hip:*; every stage, offline)"
