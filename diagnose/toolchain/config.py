"""The toolchains made on this machine: `<cache>/toolchains.json`, one record per toolchain.

The cache root is `diagnose.ir.cache.cache_root()`: `.diagnose_cache/` under the current directory
unless `DIAGNOSE_CACHE_DIR` names another. Environments live beside the file, in
`<cache>/toolchains/<name>/venv`. Every function takes the root explicitly (default: the cache
root), so tests can point several caches at one environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from diagnose.cache import cache_root, read_json, write_json_atomic
from diagnose.records import Record

CONFIG_FILE = "toolchains.json"
CONFIG_VERSION = 1


@dataclass(frozen=True)
class ToolchainRecord(Record):
    """One environment made by `toolchain setup`: where its Python is, what was installed, and
    what its probe said it can do here (`capabilities`, the probe's JSON)."""

    name: str
    python: str
    venv: str
    requirements: tuple[str, ...]
    versions: tuple[tuple[str, str], ...]
    created: str
    setup_seconds: float
    capabilities: dict

    @staticmethod
    def from_dict(data: dict) -> ToolchainRecord:
        return ToolchainRecord(
            name=data["name"],
            python=data["python"],
            venv=data["venv"],
            requirements=tuple(data["requirements"]),
            versions=tuple(tuple(v) for v in data["versions"]),
            created=data["created"],
            setup_seconds=float(data["setup_seconds"]),
            capabilities=dict(data.get("capabilities") or {}),
        )

    def version(self, distribution: str) -> str | None:
        return dict(self.versions).get(distribution)


def toolchains_dir(name: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / "toolchains" / name


def config_path(root: Path | None = None) -> Path:
    return (root or cache_root()) / CONFIG_FILE


def load_records(root: Path | None = None) -> dict[str, ToolchainRecord]:
    """Every recorded toolchain (an unreadable or foreign-version file reads as none)."""
    data = read_json(config_path(root))
    if not isinstance(data, dict) or data.get("version") != CONFIG_VERSION:
        return {}
    out = {}
    for name, item in data.get("toolchains", {}).items():
        try:
            out[name] = ToolchainRecord.from_dict(item)
        except (KeyError, TypeError, ValueError):
            continue  # a hand-edited or half-written entry: treat it as not set up
    return out


def find_record(name: str, root: Path | None = None) -> ToolchainRecord | None:
    """The record of toolchain `name` whose interpreter still exists, or None."""
    record = load_records(root).get(name)
    if record is None or not Path(record.python).exists():
        return None
    return record


def save_record(record: ToolchainRecord, root: Path | None = None) -> Path:
    """Add or replace `record` in the config file (written atomically)."""
    records = load_records(root)
    records[record.name] = record
    path = config_path(root)
    write_json_atomic(
        path, {"version": CONFIG_VERSION, "toolchains": {k: v.to_dict() for k, v in sorted(records.items())}}
    )
    return path
