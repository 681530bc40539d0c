"""`diagnose profile TASK.py [--device cuda] [--ncu] [--proton]` as a plain function, for `diagnose/cli.py` to wire.

`profile_command(path, device, ncu, target, plot_dir, fmt) -> (exit code, stdout text)`: prints the
roofline position, the classification and the top evidence, and writes the plot (PNG and SVG) and
`<task>.profile.json` into `plot_dir`. On a machine with no device it says so in one line and shows
the static estimate. Bad input raises `diagnose.errors.UsageError` (one line). Exit code 0 when the
task was profiled (findings are diagnoses, not failures).
"""

from __future__ import annotations

import json

from diagnose.errors import EXIT_OK, UsageError
from diagnose.profiling.profile import ProfileOptions, profile_task
from diagnose.profiling.render import render_text
from diagnose.targets import lookup


def profile_command(
    path: str,
    device: str = "cuda",
    ncu: bool = False,
    target: str | None = None,
    plot_dir: str | None = None,
    fmt: str = "text",
    groups: list[str] | None = None,
    baselines: tuple[str, ...] = ("eager",),
    refresh_ceilings: bool = False,
    timeout_s: float = 900.0,
    ncu_timeout_s: float = 300.0,
    proton: bool = False,
) -> tuple[int, str]:
    if fmt not in ("text", "json"):
        raise UsageError(f"unknown format {fmt!r}; formats: text, json")
    if target is not None:
        lookup(target)
    unknown = set(baselines) - {"eager", "compile"}
    if unknown:
        raise UsageError(f"unknown baseline {', '.join(sorted(unknown))}; baselines: eager, compile")
    options = ProfileOptions(
        device=device,
        ncu=ncu,
        proton=proton,
        target=target,
        groups=tuple(groups) if groups else None,
        baselines=tuple(baselines),
        artifacts_dir=plot_dir,
        refresh_ceilings=refresh_ceilings,
        timeout_s=timeout_s,
        ncu_timeout_s=ncu_timeout_s,
    )
    result = profile_task(path, options)
    if fmt == "json":
        return EXIT_OK, json.dumps({"schema": "diagnose.profile/1", **result.to_dict()}, indent=1) + "\n"
    return EXIT_OK, render_text(result)
