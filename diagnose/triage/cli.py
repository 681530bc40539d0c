"""`diagnose triage PATH...`: the command's logic as a plain function; `diagnose/cli.py` wires it
into the command line and maps `UsageError` to exit code 2."""

from __future__ import annotations

import io
import json
import tokenize
from pathlib import Path

from diagnose.errors import EXIT_FAILED, EXIT_OK, UsageError
from diagnose.records import Finding
from diagnose.triage.codes import select_codes
from diagnose.triage.config import find_settings
from diagnose.triage.engine import SEVERITY_RANK, at_or_above, triage_source
from diagnose.triage.sarif import render_sarif
from diagnose.targets import lookup
from diagnose.triage.text import render_text

FORMATS = ("text", "json", "sarif")
FAIL_ON = ("error", "warning", "info", "never")
DEFAULT_TARGET = "cuda:sm90"
SKIP_DIRS = {"__pycache__", "node_modules", "venv", "site-packages"}


def triage_command(
    paths: list[str],
    target: str | None = None,
    fmt: str = "text",
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    fail_on: str = "warning",
    config_root: str | None = None,
) -> tuple[int, str]:
    """Triage files and folders; returns (exit code, text for stdout).

    `target=None` means "from [tool.diagnose], else cuda:sm90"; a given target, select or ignore
    overrides the configuration (a code selected by name also escapes the configuration's ignore). `config_root` is the project root: the pyproject.toml search stops
    there and SARIF URIs are relative to it (default: the current directory for URIs, no stop).
    Exit 1 when a finding is at or above `fail_on`, else 0; bad usage raises UsageError.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fail_on not in FAIL_ON:
        raise UsageError(f"unknown --fail-on {fail_on!r}: expected one of {', '.join(FAIL_ON)}")
    for codes in (select, ignore):
        select_codes(codes, None) if codes else None  # unknown codes fail before any file is read
    if target is not None:
        lookup(target)
    files = collect_files(paths)
    findings: list[Finding] = []
    sources: dict[str, str] = {}
    for file in files:
        settings = find_settings(file, config_root)
        source = read_source(file)
        sources[file] = source
        findings += triage_source(
            source,
            file,
            target or settings.target or DEFAULT_TARGET,
            select=select if select is not None else settings.select,
            ignore=ignore if ignore is not None else _config_ignore(settings.ignore, select),
        )
    code = EXIT_FAILED if at_or_above(findings, fail_on) else EXIT_OK
    if fmt == "json":
        return code, json.dumps([f.to_dict() for f in findings], indent=2) + "\n"
    if fmt == "sarif":
        return code, json.dumps(render_sarif(findings, sources, config_root or "."), indent=2) + "\n"
    return code, render_text(findings, sources)


def _config_ignore(ignore: tuple[str, ...] | None, cli_select: list[str] | None) -> list[str] | None:
    """The configuration's ignores, minus codes the command line selected by name: `--select TRI001`
    runs TRI001 even where pyproject.toml ignores it."""
    if ignore is None:
        return None
    explicit = {s.upper() for s in cli_select or ()}
    return [code for code in ignore if code.upper() not in explicit]


def collect_files(paths: list[str]) -> list[str]:
    if not paths:
        raise UsageError("no path given: pass one or more Python files or folders")
    files: list[str] = []
    for path in paths:
        p = Path(path)
        if p.is_file():
            files.append(str(p))
        elif p.is_dir():
            files += sorted(
                str(f)
                for f in p.rglob("*.py")
                if f.is_file()
                and not any(part.startswith(".") or part in SKIP_DIRS for part in f.relative_to(p).parts[:-1])
            )
        else:
            raise UsageError(f"{path}: no such file or folder")
    return list(dict.fromkeys(files))


def read_source(path: str) -> str:
    """The file's text: its coding cookie or UTF-8; undecodable bytes become U+FFFD, never an error."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):
        encoding = "utf-8"
    try:
        return data.decode(encoding, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


__all__ = ["triage_command", "SEVERITY_RANK"]
