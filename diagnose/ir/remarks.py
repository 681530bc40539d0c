"""MLIR remarks and warnings: switched on per pass run, captured at file descriptor 2, parsed.

MLIR prints diagnostics through `llvm::errs()`, i.e. straight to fd 2: `sys.stderr` redirection
and pytest's `capsys` never see them, so `capture_fd` swaps the descriptor itself. The switch,
`MLIR_ENABLE_DIAGNOSTICS=remarks,warnings`, is read by every `pass_manager.run`; Triton also puts
it into the compile's cache key, so we set it only *inside* each run (see `passes.py`): the hash
and the artefacts stay those of a plain compile. Each diagnostic carries the Python location of the
op that raised it, the source line and a caret, and may be followed by `note:` lines.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

DIAGNOSTICS_ENV = "MLIR_ENABLE_DIAGNOSTICS"

# /tmp/k.py:17:27: remark: MMA version 3 acceleration not applied due to unsupported shapes or data types.
DIAG_RE = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>remark|warning|error|note): (?P<msg>.*)$"
)


@dataclass(frozen=True)
class Diagnostic:
    """One MLIR diagnostic with the notes that follow it, and the pass run that emitted it."""

    path: str
    line: int
    col: int
    severity: str
    message: str
    notes: tuple[str, ...] = ()
    pass_name: str = ""
    stage: str = ""
    raw: str = ""


@contextlib.contextmanager
def capture_fd(fd: int = 2) -> Iterator[dict[str, str]]:
    """Redirect file descriptor `fd` to a temporary file; `box["text"]` holds what was written."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(fd)
    box: dict[str, str] = {}
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")


@contextlib.contextmanager
def diagnostics_enabled(kinds: str = "remarks,warnings") -> Iterator[None]:
    """Set `MLIR_ENABLE_DIAGNOSTICS` for the duration of one pass-manager run, then restore it."""
    old = os.environ.get(DIAGNOSTICS_ENV)
    os.environ[DIAGNOSTICS_ENV] = kinds
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(DIAGNOSTICS_ENV, None)
        else:
            os.environ[DIAGNOSTICS_ENV] = old


def parse_diagnostics(text: str, pass_name: str = "", stage: str = "") -> list[Diagnostic]:
    """Diagnostics in fd-2 text; `note:` lines attach to the diagnostic before them; duplicates fold."""
    out: list[Diagnostic] = []
    current: dict | None = None

    def flush() -> None:
        if current is not None:
            diag = Diagnostic(**{**current, "notes": tuple(current["notes"])})
            if diag not in out:
                out.append(diag)

    for line in text.splitlines():
        m = DIAG_RE.match(line)
        if not m:
            continue
        if m["sev"] == "note" and current is not None:
            current["notes"].append(m["msg"].strip())
            continue
        flush()
        current = dict(
            path=m["file"],
            line=int(m["line"]),
            col=int(m["col"]),
            severity=m["sev"],
            message=m["msg"].strip(),
            notes=[],
            pass_name=pass_name,
            stage=stage,
            raw=line,
        )
    flush()
    return out
