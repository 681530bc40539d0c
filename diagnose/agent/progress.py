"""What `diagnose optimize` shows while it runs: the level and the node or candidate under way.

On a terminal, a rich live line (spinner, level, what runs now, elapsed time) with every trace step
printed above it as it lands; anywhere else (a pipe, a log, a test's subprocess) the trace steps and the
candidates as plain lines, one each, never wrapped. `quiet` shows nothing. The hooks match
`diagnose.agent.run.optimize`'s `on_start`, `on_step` and `on_candidate`.
"""

from __future__ import annotations

from typing import Self

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

LEVEL_OF_NODE = {"baseline": "baseline", "triage": "triage", "profile": "profile", "inspect_ir": "ir",
                 "analyze_passes": "passes"}
DOING = {"baseline": "verifying the task as given", "triage": "running the source rules",
         "profile": "profiling: roofline and bottleneck", "inspect_ir": "compiling offline: IR facts",
         "analyze_passes": "controlled recompiles and the pass timeline", "propose": "proposing rewrites",
         "verify": "verifying candidates", "decide": "deciding", "escalate": "deciding whether to go deeper",
         "finish": "finishing"}


class OptimizeProgress:
    """The progress display of one run; use as a context manager around `optimize(...)`."""

    def __init__(self, console: Console, quiet: bool = False):
        self.console = console
        self.quiet = quiet
        self.level = "-"
        self.bar: Progress | None = None
        self.line = None

    @property
    def live(self) -> bool:
        return self.console.is_terminal and not self.quiet

    def __enter__(self) -> Self:
        if self.live:
            self.bar = Progress(SpinnerColumn(), TextColumn("[bold]{task.fields[level]}[/bold]"),
                                TextColumn("{task.description}"), TimeElapsedColumn(), console=self.console,
                                transient=True)
            self.bar.start()
            self.line = self.bar.add_task("starting", level=self.level, total=None)
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def show(self, doing: str) -> None:
        if self.bar is not None:
            self.bar.update(self.line, description=doing, level=self.level)

    def print(self, text: str) -> None:
        if self.quiet:
            return
        target = self.bar.console if self.bar is not None else self.console
        target.print(text, markup=False, highlight=False, soft_wrap=True)

    def on_start(self, node: str) -> None:
        self.level = LEVEL_OF_NODE.get(node, self.level)
        self.show(DOING.get(node, node))

    def on_step(self, node: str, values: dict) -> None:
        for step in values.get("trace", []):
            self.level = step["level"]
            self.print(f"[{step['level']}] {step['action']}: {step['reason']}")

    def on_candidate(self, candidate: str, index: int, total: int) -> None:
        doing = f"verifying {candidate} ({index}/{total})"
        self.show(doing)
        if self.bar is None:
            self.print(f"[{self.level}] {doing}")
