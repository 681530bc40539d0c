"""What `diagnose optimize` shows while it runs: the level and the node or candidate under way.

On a terminal, a rich live line (spinner, level, what runs now and which step of a verification,
elapsed time) with every trace step printed above it as it lands; anywhere else (a pipe, a log, a
test's subprocess) a plain line, never wrapped, as each node that does work starts, as each candidate
and each step of a verification starts, and for each trace step: no stretch longer than one
verification step stays silent. `quiet` shows none of it. The run's id, with the command that resumes
it, is shown even when quiet (`on_run`): it is what a killed run needs. The hooks match
`diagnose.agent.run.optimize`'s `on_run`, `on_start`, `on_step`, `on_candidate` and `on_phase`.
"""

from __future__ import annotations

from typing import Self

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from diagnose.verify.harness import PHASES

LEVEL_OF_NODE = {
    "baseline": "baseline",
    "triage": "triage",
    "profile": "profile",
    "inspect_ir": "ir",
    "analyze_passes": "passes",
}
DOING = {
    "baseline": "verifying the task as given",
    "triage": "running the source rules",
    "profile": "profiling: roofline and bottleneck",
    "inspect_ir": "compiling offline: IR facts",
    "analyze_passes": "controlled recompiles and the pass timeline",
    "propose": "proposing rewrites",
    "verify": "verifying candidates",
    "decide": "deciding",
    "escalate": "deciding whether to go deeper",
    "finish": "finishing",
}
# Nodes that only decide (at once): their decision is printed as a trace step, their start is not.
INSTANT = {"decide", "escalate", "finish"}


def resume_hint(run_id: str) -> str:
    return f"run {run_id}; resume it with: diagnose optimize --resume {run_id}"


class OptimizeProgress:
    """The progress display of one run; use as a context manager around `optimize(...)`."""

    def __init__(self, console: Console, quiet: bool = False):
        self.console = console
        self.quiet = quiet
        self.level = "-"
        self.doing = "starting"
        self.run_id: str | None = None
        self.bar: Progress | None = None
        self.line = None

    @property
    def live(self) -> bool:
        return self.console.is_terminal and not self.quiet

    def __enter__(self) -> Self:
        if self.live:
            self.bar = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.fields[level]}[/bold]"),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.line = self.bar.add_task("starting", level=self.level, total=None)
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def show(self, doing: str) -> None:
        if self.bar is not None:
            self.bar.update(self.line, description=doing, level=self.level)

    def print(self, text: str, always: bool = False) -> None:
        if self.quiet and not always:
            return
        target = self.bar.console if self.bar is not None else self.console
        target.print(text, markup=False, highlight=False, soft_wrap=True)

    def on_run(self, run_id: str) -> None:
        self.run_id = run_id
        self.print(resume_hint(run_id), always=True)

    def on_start(self, node: str) -> None:
        self.level = LEVEL_OF_NODE.get(node, self.level)
        self.doing = DOING.get(node, node)
        self.show(self.doing)
        if self.bar is None and node not in INSTANT:
            self.print(f"[{self.level}] {self.doing}")

    def on_step(self, node: str, values: dict) -> None:
        for step in values.get("trace", []):
            self.level = step["level"]
            self.print(f"[{step['level']}] {step['action']}: {step['reason']}")

    def on_candidate(self, candidate: str, index: int, total: int) -> None:
        self.doing = f"verifying {candidate} ({index}/{total})"
        self.show(self.doing)
        if self.bar is None:
            self.print(f"[{self.level}] {self.doing}")

    def on_phase(self, phase: str) -> None:
        self.show(f"{self.doing}: {PHASES.get(phase, phase)}")
        if self.bar is None:
            self.print(f"[{self.level}] {self.doing}: {phase}")
