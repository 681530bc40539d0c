"""The progress display of `diagnose optimize`: plain lines off a terminal, a live line on one, nothing when
quiet but the run id."""

import io

from rich.console import Console

from diagnose.agent.progress import OptimizeProgress

STEP = {"trace": [{"level": "profile", "action": "roofline and bottleneck", "reason": "a reason " * 20}]}


def drive(progress: OptimizeProgress) -> None:
    with progress:
        progress.on_run("20250101-000000-abcdef")
        progress.on_start("profile")
        progress.on_step("profile", STEP)
        progress.on_start("verify")
        progress.on_candidate("widen-abc", 1, 2)
        progress.on_phase("candidate")
        progress.on_step("verify", {})
        progress.on_start("decide")


def test_plain_lines_when_not_a_terminal():
    """A line as each node that works starts, as each candidate and each step of its verification starts,
    and for each trace step: nothing long goes unsaid; the nodes that only decide say it in their step."""
    out = io.StringIO()
    drive(OptimizeProgress(Console(file=out, width=40)))
    lines = out.getvalue().splitlines()
    assert lines == [
        "run 20250101-000000-abcdef; resume it with: diagnose optimize --resume 20250101-000000-abcdef",
        "[profile] profiling: roofline and bottleneck",
        "[profile] roofline and bottleneck: " + "a reason " * 20,
        "[profile] verifying candidates",
        "[profile] verifying widen-abc (1/2)",
        "[profile] verifying widen-abc (1/2): candidate",
    ]


def test_live_on_a_terminal_and_nothing_when_quiet():
    out = io.StringIO()
    progress = OptimizeProgress(Console(file=out, force_terminal=True, width=120))
    drive(progress)
    assert progress.live and "[profile] roofline and bottleneck" in out.getvalue()
    quiet = io.StringIO()
    drive(OptimizeProgress(Console(file=quiet, force_terminal=True), quiet=True))
    assert (
        quiet.getvalue()
        == "run 20250101-000000-abcdef; resume it with: diagnose optimize --resume 20250101-000000-abcdef\n"
    )
