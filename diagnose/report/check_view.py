"""The terminal view of a `diagnose check` report: correctness, anti-cheat and timing tables."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from diagnose.records import Report, Verdict


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def correctness_table(verdict: Verdict) -> Table:
    table = Table(title="correctness", title_justify="left")
    for column in ("group", "seed", "result", "max abs err", "max rel err", "why"):
        table.add_column(column)
    for case in verdict.cases:
        table.add_row(
            case.group,
            str(case.seed),
            "pass" if case.passed else "[red]FAIL[/red]",
            fmt(case.max_abs_err),
            fmt(case.max_rel_err),
            case.reason or "",
        )
    return table


def checks_table(verdict: Verdict) -> Table:
    table = Table(title="anti-cheat", title_justify="left")
    for column in ("check", "result", "detail"):
        table.add_column(column)
    for check in verdict.checks:
        table.add_row(check.name, "pass" if check.passed else "[red]FAIL[/red]", check.detail)
    return table


def timing_table(verdict: Verdict) -> Table:
    table = Table(title="timing (ms, CUDA events, cold L2)", title_justify="left")
    for column in ("group", "variant", "median", "p20-p80", "cv", "reps", "speedup of candidate"):
        table.add_column(column)
    over_eager, over_compile = verdict.speedups("eager"), verdict.speedups("compile")
    for t in verdict.timings:
        if t.median_ms is None:
            table.add_row(t.group, t.variant, "-", "-", "-", "0", t.note)
            continue
        speedup = ""
        if t.variant == "candidate":
            parts = []
            if t.group in over_eager:
                parts.append(f"{over_eager[t.group]:.2f}x vs eager")
            if t.group in over_compile:
                parts.append(f"{over_compile[t.group]:.2f}x vs compile")
            speedup = ", ".join(parts)
        spread = f"{fmt(t.p20_ms, 4)}-{fmt(t.p80_ms, 4)}"
        table.add_row(
            t.group,
            t.variant,
            fmt(t.median_ms, 4),
            spread,
            f"{t.cv:.3f}",
            str(t.reps),
            speedup + ("" if t.stable else " (unstable)"),
        )
    return table


def render_check(report: Report, console: Console) -> None:
    candidate, verdict = report.candidates[0]
    versions = ", ".join(f"{k} {v}" for k, v in verdict.versions)
    console.print(f"[bold]{report.task}[/bold] on {verdict.device} ({versions})")
    if verdict.failure is not None:
        console.print(f"[red]candidate failed to run[/red]: {verdict.failure.kind}: {verdict.failure.message}")
        if verdict.failure.log_tail:
            console.print(verdict.failure.log_tail.strip().splitlines()[-1], markup=False)
    else:
        console.print(correctness_table(verdict))
        console.print(checks_table(verdict))
        console.print(timing_table(verdict))
    for note in verdict.notes:
        console.print(f"note: {note}", markup=False)
    if verdict.phases:
        console.print(
            "harness wall time: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in verdict.phases),
            markup=False,
        )
    console.print("[green]PASSED[/green]" if verdict.passed else "[red]FAILED[/red]")
