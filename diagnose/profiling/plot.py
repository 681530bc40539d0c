"""The roofline plot: every timed variant (candidate, initial kernel, eager, torch.compile) as a point.

`plot_roofline(points, roof, stem)` writes `<stem>.png` and `<stem>.svg` with matplotlib's `Agg`
backend (no display needed) and returns both paths.

- When some point has FLOPs: the classic log-log roofline, attainable FLOP/s against arithmetic
  intensity (FLOP/byte), the memory ceiling's slope meeting the matmul ceiling at the ridge, one
  marker per variant and group.
- When nothing counts FLOPs (elementwise and reduction tasks): a bandwidth roofline, achieved
  bytes/s (minimal bytes over measured time) per group against the copy-bandwidth ceiling.

Points come from `roofline.RooflinePosition`s, so a `Verdict`'s timings plot the same way
(`points_from_verdict`). Labels say whether the roof was measured or nominal.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.profiling.roofline import Roof, RooflinePosition, Work, position
from diagnose.records import Verdict

MARKERS = {"candidate": "o", "initial": "s", "eager": "^", "compile": "D"}


def points_from_verdict(
    verdict: Verdict, work: list[Work], roof: Roof, label_prefix: str = ""
) -> list[tuple[str, RooflinePosition]]:
    """(label, position) for every timed entry of a verdict whose group has counted work."""
    by_group = {w.group: w for w in work}
    out = []
    for t in verdict.timings:
        if t.median_ms and t.group in by_group:
            out.append((f"{label_prefix}{t.variant}", position(by_group[t.group], roof, t.median_ms * 1e-3, t.variant)))
    return out


def plot_roofline(
    points: list[tuple[str, RooflinePosition]], roof: Roof, stem: str | Path, title: str = ""
) -> list[str]:
    import matplotlib  # deferred: matplotlib is heavy (~0.4 s)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: after matplotlib.use("Agg")

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    kind = "measured" if roof.measured else "nominal"
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    with_flops = [(label, p) for label, p in points if p.achieved_flops_per_s > 0]
    if with_flops and roof.flops_per_s:
        ridge = roof.ridge or 1.0
        lo = min(min(p.intensity for _, p in with_flops), ridge) / 8
        hi = max(max(p.intensity for _, p in with_flops), ridge) * 8
        xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.plot(
            xs,
            [min(roof.flops_per_s, x * roof.bytes_per_s) / 1e12 for x in xs],
            "k-",
            lw=1.5,
            label=f"roof ({kind}): {roof.bytes_per_s / 1e12:.2f} TB/s, {roof.flops_per_s / 1e12:.0f} TFLOP/s {roof.dtype}",
        )
        for label, p in with_flops:
            ax.plot(
                p.intensity,
                p.achieved_flops_per_s / 1e12,
                MARKERS.get(p.variant, "x"),
                ms=8,
                label=f"{label} [{p.group}] {p.fraction:.0%}",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("TFLOP/s")
    else:
        groups = sorted({p.group for _, p in points})
        ax.axhline(
            roof.bytes_per_s / 1e12,
            color="k",
            lw=1.5,
            label=f"copy bandwidth ({kind}): {roof.bytes_per_s / 1e12:.2f} TB/s",
        )
        for label, p in points:
            ax.plot(
                groups.index(p.group),
                p.achieved_bytes_per_s / 1e12,
                MARKERS.get(p.variant, "x"),
                ms=8,
                label=f"{label} [{p.group}] {p.fraction:.0%}",
            )
        ax.set_xticks(range(len(groups)), groups, rotation=10)
        ax.set_xlim(-0.5, len(groups) - 0.5)
        ax.set_ylim(0, roof.bytes_per_s / 1e12 * 1.15)
        ax.set_ylabel("achieved TB/s (minimal bytes / time)")
    ax.set_title(title or "roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left" if with_flops else "lower right")
    fig.tight_layout()
    paths = []
    for ext in ("png", "svg"):
        path = Path(f"{stem}.{ext}")
        fig.savefig(path, dpi=120 if ext == "png" else None)
        paths.append(str(path))
    plt.close(fig)
    return paths
