"""`[tool.diagnose]` from the nearest pyproject.toml above a file (keys `select`, `ignore`, `target`).

Like ruff, the nearest pyproject.toml that has a `[tool.diagnose]` table wins; the walk stops at
`stop` (the project root) when one is given. Command-line arguments override what is found here.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import UsageError


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    target: str | None = None
    source: str | None = None  # the pyproject.toml these came from


def find_settings(path: str | Path, stop: str | Path | None = None) -> Settings:
    here = Path(path).resolve()
    folder = here if here.is_dir() else here.parent
    stop_at = Path(stop).resolve() if stop else None
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            table = _table(pyproject)
            if table is not None:
                return _settings(table, pyproject)
        if stop_at is not None and candidate == stop_at:
            break
    return Settings()


def _table(pyproject: Path) -> dict | None:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as err:
        raise UsageError(f"{pyproject}: cannot read [tool.diagnose]: {err}") from None
    table = data.get("tool", {}).get("diagnose")
    return table if isinstance(table, dict) else None


def _settings(table: dict, pyproject: Path) -> Settings:
    def codes(key: str) -> tuple[str, ...] | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{pyproject}: [tool.diagnose] {key} must be a list of rule codes")
        return tuple(value)

    target = table.get("target")
    if target is not None and not isinstance(target, str):
        raise UsageError(f"{pyproject}: [tool.diagnose] target must be a string like 'ascend:910b'")
    return Settings(codes("select"), codes("ignore"), target, str(pyproject))
