"""What the server is configured to do, and where each value comes from.

The client's options (`initializationOptions`, then the `diagnose` section of
`workspace/configuration`, which wins) override `[tool.diagnose]` in the nearest pyproject.toml
above the document, which overrides the defaults; for `target`, `select` and `ignore` each key falls
back on its own, as on the command line. Option names are camelCase, as LSP clients write them:

    {"target": "cuda:sm90", "select": ["TRI"], "ignore": ["TRI024"], "irOnSave": true,
     "device": "cpu", "debounceMs": 30, "maxCandidates": 4, "docsUrl": "https://example.org/rules/{code}.html"}

A bad value never stops the server: it is dropped, and the problem is returned for the log.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from diagnose.errors import DiagnoseError
from diagnose.triage.codes import select_codes
from diagnose.triage.config import find_settings
from diagnose.targets import lookup

DEFAULT_TARGET = "cuda:sm90"
DEFAULT_DEBOUNCE_MS = 30
DEVICES = ("cpu", "cuda", "npu")


@dataclass(frozen=True)
class ClientOptions:
    """The options a client sent; None means "not given" (fall back to pyproject.toml or default)."""

    target: str | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    ir_on_save: bool | None = None
    device: str | None = None
    debounce_ms: int | None = None
    docs_url: str | None = None
    max_candidates: int | None = None

    def merged(self, newer: ClientOptions) -> ClientOptions:
        """These options with every value that `newer` gives replacing ours."""
        given = {k: v for k, v in vars(newer).items() if v is not None}
        return replace(self, **given)


@dataclass(frozen=True)
class Settings:
    """What one document is analysed with: every value resolved."""

    target: str = DEFAULT_TARGET
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    ir_on_save: bool = True
    device: str = "cpu"
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    max_candidates: int = 12


def parse_options(data: Any) -> tuple[ClientOptions, list[str]]:
    """Client options from a JSON object, and one message per value that was dropped."""
    if data is None:
        return ClientOptions(), []
    if not isinstance(data, dict):
        return ClientOptions(), [f"diagnose options must be an object, got {type(data).__name__}"]
    # Some clients nest the section under its name (VS Code's generic clients often do).
    if isinstance(data.get("diagnose"), dict):
        data = data["diagnose"]
    problems: list[str] = []
    values: dict[str, Any] = {}

    target = data.get("target")
    if target is not None:
        try:
            lookup(str(target))
            values["target"] = str(target)
        except DiagnoseError as err:
            problems.append(f"target: {err}")
    for key in ("select", "ignore"):
        codes = _codes(data.get(key), key, problems)
        if codes is not None:
            values[key] = codes
    if data.get("irOnSave") is not None:
        if isinstance(data["irOnSave"], bool):
            values["ir_on_save"] = data["irOnSave"]
        else:
            problems.append(f"irOnSave: expected true or false, got {data['irOnSave']!r}")
    device = data.get("device")
    if device is not None:
        if device in DEVICES:
            values["device"] = device
        else:
            problems.append(f"device: {device!r} is not one of {', '.join(DEVICES)}")
    debounce = data.get("debounceMs")
    if debounce is not None:
        if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and 0 <= debounce <= 5000:
            values["debounce_ms"] = int(debounce)
        else:
            problems.append(f"debounceMs: {debounce!r} is not a number of milliseconds (0-5000)")
    most = data.get("maxCandidates")
    if most is not None:
        if isinstance(most, int) and not isinstance(most, bool) and 1 <= most <= 100:
            values["max_candidates"] = most
        else:
            problems.append(f"maxCandidates: {most!r} is not a whole number from 1 to 100")
    if isinstance(data.get("docsUrl"), str) and "{code}" in data["docsUrl"]:
        values["docs_url"] = data["docsUrl"]
    return ClientOptions(**values), problems


def _codes(value: Any, key: str, problems: list[str]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{key}: expected a list of rule codes")
        return None
    try:
        select_codes(value, None)  # unknown codes are dropped with the whole list: no half-applied filter
    except DiagnoseError as err:
        problems.append(f"{key}: {err}")
        return None
    return tuple(value)


def resolve(options: ClientOptions, path: str | None, root: str | None = None) -> tuple[Settings, list[str]]:
    """The settings for a document at `path` (None for an unsaved buffer) and any problems found.

    `[tool.diagnose]` is searched from the document's folder up to `root` (the workspace root).
    """
    problems: list[str] = []
    project = None
    if path is not None:
        try:
            project = find_settings(path, root if root and _inside(path, root) else None)
        except DiagnoseError as err:  # a broken pyproject.toml: say so, carry on with the rest
            problems.append(str(err))
    target = options.target or (project.target if project else None) or DEFAULT_TARGET
    if options.target is None and project is not None and project.target:
        try:
            lookup(project.target)
        except DiagnoseError as err:
            problems.append(f"{project.source}: {err}")
            target = DEFAULT_TARGET
    select = options.select if options.select is not None else (project.select if project else None)
    ignore = options.ignore if options.ignore is not None else (project.ignore if project else None)
    if options.select is None or options.ignore is None:
        try:
            select_codes(select, ignore)
        except DiagnoseError as err:
            problems.append(f"{project.source if project else 'pyproject.toml'}: {err}")
            select = options.select
            ignore = options.ignore
    return Settings(
        target=target,
        select=select,
        ignore=ignore,
        ir_on_save=True if options.ir_on_save is None else options.ir_on_save,
        device=options.device or "cpu",
        debounce_ms=DEFAULT_DEBOUNCE_MS if options.debounce_ms is None else options.debounce_ms,
        max_candidates=options.max_candidates or 12,
    ), problems


def _inside(path: str, root: str) -> bool:
    try:
        return Path(path).resolve().is_relative_to(Path(root).resolve())
    except OSError:
        return False
