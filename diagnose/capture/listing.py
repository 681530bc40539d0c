"""`diagnose capture --list FILE`: a kernel module's captured launches, numbered as `--launch N` counts them."""

from __future__ import annotations

from pathlib import Path

from diagnose.errors import UsageError
from diagnose.task.launches import launches_to_replay, listing

WIDTH = 160


def render_listing(path: Path, launches: str | None = None) -> str:
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    records = listing(launches_to_replay(path, launches))
    if not records:
        return f"{path}: no captured launches (run `diagnose capture -- <your tests>`)"
    lines = [
        f"{len(records)} launches captured from {path} (host calls first, then bare launches, each largest first; --launch N picks one):"
    ]
    for i, record in enumerate(records):
        replay = record.replay if len(record.replay) <= WIDTH else record.replay[: WIDTH - 3] + "..."
        origin = f", by {record.by}" if record.by else ""
        kind = "host call" if record.call else "kernel launch"
        lines.append(f"{i:3d}  {record.kernel} (line {record.line}, x{record.count}{origin}), {kind}:")
        lines.append(f"     {replay}")
    return "\n".join(lines)
