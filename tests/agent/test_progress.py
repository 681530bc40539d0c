"""The progress display of `diagnose optimize`: plain lines off a terminal, a live line on one, nothing when quiet."""

import io

from rich.console import Console

from diagnose.agent.progress import OptimizeProgress

STEP = {"trace": [{"level": "profile", "action": "roofline and bottleneck", "reason": "a reason " * 20}]}


def drive(progress: OptimizeProgress) -> None:
    with progress:
        progress.on_start("profile")
        progress.on_step("profile", STEP)
        progress.on_start("verify")
        progress.on_candidate("widen-abc", 1, 2)
        progress.on_step("verify", {})


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    drive(OptimizeProgress(Console(file=out, width=40)))
    lines = out.getvalue().splitlines()
    assert lines == ["[profile] roofline and bottleneck: " + "a reason " * 20, "[profile] verifying widen-abc (1/2)"]


def test_live_on_a_terminal_and_nothing_when_quiet():
    out = io.StringIO()
    progress = OptimizeProgress(Console(file=out, force_terminal=True, width=120))
    drive(progress)
    assert progress.live and "[profile] roofline and bottleneck" in out.getvalue()
    quiet = io.StringIO()
    drive(OptimizeProgress(Console(file=quiet, force_terminal=True), quiet=True))
    assert quiet.getvalue() == ""
