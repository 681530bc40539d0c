"""Text rendering of a `ProfileResult`: what `diagnose profile` prints.

Per input group: the roofline position of every timed variant (time, bound, fraction of the
roofline), the static estimate (always labelled an estimate), the classification (the primary
finding), the top evidence behind it, and the secondary findings; then the ncu notes and the plot
paths. The JSON form is `ProfileResult.to_dict()`.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.profiling.profile import ProfileResult
from diagnose.records import Evidence

TOP_EVIDENCE = 6


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.3g} us"


def ceilings_line(result: ProfileResult) -> str:
    c = result.ceilings
    kind = "measured" if c.measured else "nominal"
    rates = ", ".join(f"{d} {r / 1e12:.0f}" for d, r in c.matmul_flops_per_s)
    bw = f"{c.copy_bytes_per_s / 1e12:.2f} TB/s" if c.copy_bytes_per_s else "no bandwidth"
    launch = f", launch {c.launch_overhead_s * 1e6:.1f} us" if c.launch_overhead_s else ""
    return f"ceilings ({kind}, {c.device}): copy {bw}; matmul TFLOP/s {rates or 'n/a'}{launch}"


def evidence_line(e: Evidence) -> str:
    where = f"{Path(e.location.path).name}:{e.location.line} " if e.location else ""
    args = ", ".join(f"{k}={v}" for k, v in e.args if k not in ("group", "variant", "label"))
    return f"{where}{e.name} [{e.source}] {args}"


def proton_lines(result: ProfileResult, group: str) -> list[str]:
    """Proton's scope times of one group, each with its slowest kernel."""
    out = []
    for e in result.evidence:
        scope = str(e.arg("scope", ""))
        if e.source != "proton" or e.name != "ScopeTime" or not scope.endswith(f"@{group}"):
            continue
        rate = e.arg("achieved_bytes_per_s")
        slowest = next(
            (k for k in result.evidence if k.source == "proton" and k.name == "KernelTime" and k.arg("scope") == scope),
            None,
        )
        out.append(
            f"  proton     {scope.split('@')[0]:<10} {e.arg('ms_per_forward'):.4f} ms/forward"
            + (f"  {rate / 1e12:.2f} TB/s" if rate else "")
            + (
                f"  slowest {slowest.arg('kernel')} {slowest.arg('us_per_launch')} us/launch "
                f"({slowest.arg('share'):.0%})"
                if slowest
                else ""
            )
        )
    return out


def render_text(result: ProfileResult) -> str:
    name = Path(result.task).name
    lines = []
    if not result.timed:
        lines.append(
            f"{result.notes[0]}; showing the static estimate for {result.target} (an estimate, not a measurement)"
        )
    lines.append(f"{name}  device {result.device}  target {result.target}")
    lines.append("  " + ceilings_line(result))
    for group in result.groups:
        work = next((w for w in result.work if w.group == group), None)
        lines.append(f"== {group}")
        if work:
            lines.append(
                f"  work       {_si(work.bytes, 'B')} ({work.bytes_source}), {_si(work.flops, 'FLOP')} ({work.flops_source}), "
                f"{work.dtype}; intensity {work.intensity:.3g} FLOP/B"
            )
        for p in (p for p in result.positions if p.group == group):
            lines.append(
                f"  roofline   {p.variant:<10} {_ms(p.time_s):>10}  bound {_ms(p.bound_s)} ({p.regime})  "
                f"{p.fraction:6.1%} of roofline  {p.achieved_bytes_per_s / 1e12:.2f} TB/s"
                + (f", {p.achieved_flops_per_s / 1e12:.0f} TFLOP/s" if p.achieved_flops_per_s else "")
            )
        for k in (k for k in result.kernels if k.group == group):
            e = k.estimate
            lines.append(
                f"  estimate   {k.kernel:<10} {_ms(e.time_s):>10}  (static {e.label}: {e.bottleneck}; memory {_ms(e.memory_s)}, "
                f"compute {_ms(e.compute_s)}, overhead {_ms(e.overhead_s)})"
            )
        lines += proton_lines(result, group)
        findings = result.group_findings(group)
        primary = next((f for f in findings if f.code != "PRF301"), None)
        if primary:
            lines.append(f"  class      {primary.code} {primary.message}  [{primary.confidence} confidence]")
            for e in primary.evidence[:TOP_EVIDENCE]:
                lines.append(f"    - {evidence_line(e)}")
        for f in findings:
            if f is not primary and f.code != "PRF301":
                lines.append(f"  also       {f.code} {f.message}")
                for e in f.evidence[:2]:
                    lines.append(f"    - {evidence_line(e)}")
    for note in result.notes[1 if not result.timed else 0 :]:
        lines.append(f"note: {note}")
    if result.plots:
        lines.append("plot: " + ", ".join(result.plots))
    return "\n".join(lines) + "\n"
