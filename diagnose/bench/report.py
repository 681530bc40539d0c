"""Sweep reports: per entry and input group, the distribution of speedups, and, in the open, every entry
that did not improve or is still slower than eager, and why. Rendered as Markdown, HTML (with a
histogram), JSON and CSV.

Metrics (over all entry x group rows, as KernelBench's fast_p divides by the total):
- geometric mean and median speedup over eager and over `torch.compile`, over correct timed rows;
- counts above 2x and above 5x;
- fast_p: the share of rows that are correct and faster than p times the baseline, p = 1, 1.5, 2;
  fast_0, the share that are correct at all, is in the counts line (it needs no baseline).
In score mode the candidate is the initial kernel, so "speedup over initial" is 1 by definition and the
optimized columns stay empty; rows that were not timed (CPU) say so instead of a number.

Tokens (the optional LLM path): a row whose data carries `tokens` (`prompt`, `completion`, `requests`,
`verified`, counted per entry as the LLM server reported them) shows them in the `tokens` column, and
the summary gives tokens per task and per verified success over the entries that have them. Rows
without token counts used no LLM: the column stays empty and the summary says "no LLM used".
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import statistics
from dataclasses import dataclass

from diagnose.bench.store import Row
from diagnose.scoring import geomean

FAST_P = (1.0, 1.5, 2.0)
NOT_IMPROVED = "Not improved, or slower than eager, and why"
COLUMNS = (
    "entry",
    "group",
    "status",
    "initial_ms",
    "optimized_ms",
    "speedup_vs_initial",
    "speedup_vs_eager",
    "speedup_vs_compile",
    "roofline_fraction",
    "deepest_level",
    "rewrites",
    "why",
    "tokens",
)


@dataclass(frozen=True)
class Line:
    """One report row: an entry on one input group."""

    entry: str
    group: str
    status: str
    initial_ms: float | None
    optimized_ms: float | None
    speedup_vs_initial: float | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    roofline_fraction: float | None
    deepest_level: str | None
    rewrites: str  # the best candidate's rewrites, then the findings they answer in brackets
    why: str
    tokens: int | None = None


def why_not(row: Row) -> str:
    data = row.data
    if data.get("failure"):
        return f"{data['failure']['kind']}: {data['failure']['message']}"
    parts = list(data.get("reasons", [])) + list(data.get("failed_checks", []))
    gain = data.get("speedup_vs_initial") if row.mode == "optimize" else None
    gained = bool(gain and gain > 1.0)  # an optimized row that beat its initial kernel did improve
    if not parts and not data.get("timed"):
        parts.append("not timed (no device)")
    elif not parts and data.get("speedup_vs_eager") is None:
        if not gained:  # one that gained has nothing to explain: there is no eager to beat
            parts.append("no eager baseline timed")
    elif not parts and data["speedup_vs_eager"] < 1.0:
        improved = f"{gain:.3g}x over the initial kernel, " if gained else ""  # listed for eager alone
        parts.append(f"{improved}slower than eager ({data['speedup_vs_eager']:.3g}x)")
    return "; ".join(parts)


def lines(rows: list[Row]) -> list[Line]:
    out = []
    for row in rows:
        data = row.data
        medians = data.get("medians_ms", {})
        candidate = medians.get("candidate")
        out.append(
            Line(
                entry=row.entry,
                group=row.group,
                status=row.status,
                initial_ms=medians.get("initial", candidate) if row.mode == "score" else medians.get("initial"),
                optimized_ms=candidate if row.mode == "optimize" else None,
                speedup_vs_initial=1.0 if row.mode == "score" and candidate else data.get("speedup_vs_initial"),
                speedup_vs_eager=data.get("speedup_vs_eager"),
                speedup_vs_compile=data.get("speedup_vs_compile"),
                roofline_fraction=data.get("roofline_fraction"),
                deepest_level=data.get("deepest_level"),
                rewrites=", ".join(data.get("rewrites", []))
                + (f" [answers {', '.join(data['answers'])}]" if data.get("answers") else ""),
                why=why_not(row),
                tokens=entry_tokens(row),
            )
        )
    return out


def entry_tokens(row: Row) -> int | None:
    tokens = row.data.get("tokens")
    return int(tokens.get("prompt", 0)) + int(tokens.get("completion", 0)) if tokens else None


def token_summary(rows: list[Row]) -> dict:
    """Tokens per task and per verified success, over entries whose rows carry token counts."""
    per_entry = {(r.suite, r.entry): r.data["tokens"] for r in rows if r.data.get("tokens")}
    if not per_entry:
        return {"llm_used": False, "note": "no LLM used"}
    total = sum(int(t.get("prompt", 0)) + int(t.get("completion", 0)) for t in per_entry.values())
    verified = sum(int(t.get("verified", 0)) for t in per_entry.values())
    return {
        "llm_used": True,
        "tasks": len(per_entry),
        "total": total,
        "per_task": total / len(per_entry),
        "requests": sum(int(t.get("requests", 0)) for t in per_entry.values()),
        "verified": verified,
        "per_verified_success": total / verified if verified else None,
    }


def token_line(tokens: dict) -> str:
    if not tokens["llm_used"]:
        return tokens["note"]
    per_success = cell(tokens["per_verified_success"]) if tokens["verified"] else "- (no verified success)"
    return (
        f"{tokens['total']} tokens over {tokens['tasks']} tasks ({tokens['requests']} requests): "
        f"{cell(tokens['per_task'])} per task, {per_success} per verified success ({tokens['verified']} verified)"
    )


def distribution(report_lines: list[Line], baseline: str) -> dict:
    key = f"speedup_vs_{baseline}"
    speedups = [
        getattr(line, key) for line in report_lines if line.status == "passed" and getattr(line, key) is not None
    ]
    total = len(report_lines)
    return {
        "baseline": baseline,
        "rows": total,
        "timed_correct": len(speedups),
        "geomean": geomean(speedups),
        "median": statistics.median(speedups) if speedups else None,
        "above_2x": sum(s > 2 for s in speedups),
        "above_5x": sum(s > 5 for s in speedups),
        # Nothing timed (CPU): fast_p is unknown, not zero.
        "fast_p": {str(p): (sum(s > p for s in speedups) / total if speedups else None) for p in FAST_P},
    }


def summary(rows: list[Row]) -> dict:
    report_lines = lines(rows)
    return {
        "rows": [line.__dict__ for line in report_lines],
        "passed": sum(line.status == "passed" for line in report_lines),
        "failed": sum(line.status not in ("passed", "unavailable") for line in report_lines),
        # a portability row for a target whose toolchain is not here is not a failure of the kernel
        "unavailable": sum(line.status == "unavailable" for line in report_lines),
        # KernelBench's fast_0: rows correct (and honest) over all rows, whatever their speed.
        "fast_0": (sum(line.status == "passed" for line in report_lines) / len(report_lines)) if report_lines else None,
        "distribution": [distribution(report_lines, b) for b in ("eager", "compile", "initial")],
        "not_improved": [
            {"entry": line.entry, "group": line.group, "why": line.why} for line in report_lines if line.why
        ],
        "tokens": token_summary(rows),
    }


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def counts_line(data: dict) -> str:
    line = f"{data['passed']} passed, {data['failed']} failed"
    line += f", {data['unavailable']} not available here" if data.get("unavailable") else ""
    return line + (f"; fast_0 (correct of all rows) {cell(data['fast_0'])}." if data.get("fast_0") is not None else ".")


def render_markdown(data: dict, title: str) -> str:
    out = [f"# {title}", "", counts_line(data), "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in data["rows"]:
        out.append("| " + " | ".join(cell(row[c]).replace("|", "\\|") for c in COLUMNS) + " |")
    out += [
        "",
        "## Distribution",
        "",
        "| over | timed and correct | geomean | median | >2x | >5x | fast_1 | fast_1.5 | fast_2 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d in data["distribution"]:
        fast = [cell(d["fast_p"][str(p)]) for p in FAST_P]
        out.append(
            f"| {d['baseline']} | {d['timed_correct']}/{d['rows']} | {cell(d['geomean'])} | {cell(d['median'])} | "
            f"{d['above_2x']} | {d['above_5x']} | " + " | ".join(fast) + " |"
        )
    out += ["", f"## {NOT_IMPROVED}", ""]
    out += [f"- {r['entry']} [{r['group']}]: {r['why']}" for r in data["not_improved"]] or ["(none)"]
    out += ["", "## Tokens", "", token_line(data["tokens"])]
    return "\n".join(out) + "\n"


def render_csv(data: dict) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
    writer.writeheader()
    for row in data["rows"]:
        writer.writerow({c: row[c] for c in COLUMNS})
    return buffer.getvalue()


def histogram_svg(data: dict) -> str:
    """An inline SVG histogram of log2 speedups over eager (empty when nothing was timed)."""
    speedups = [r["speedup_vs_eager"] for r in data["rows"] if r["speedup_vs_eager"] and r["status"] == "passed"]
    if not speedups:
        return "<p>Nothing was timed: no histogram.</p>"
    import matplotlib  # deferred: matplotlib is heavy (~0.4 s)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: after matplotlib.use("Agg")

    figure, axis = plt.subplots(figsize=(6, 3))
    axis.hist([math.log2(s) for s in speedups], bins=20)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlabel("log2 speedup over eager")
    axis.set_ylabel("entries x groups")
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def render_html(data: dict, title: str) -> str:
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell(row[c]))}</td>" for c in COLUMNS) + "</tr>" for row in data["rows"]
    )
    dist = "".join(
        f"<tr><td>{d['baseline']}</td><td>{d['timed_correct']}/{d['rows']}</td><td>{cell(d['geomean'])}</td>"
        f"<td>{cell(d['median'])}</td><td>{d['above_2x']}</td><td>{d['above_5x']}</td>"
        + "".join(f"<td>{cell(d['fast_p'][str(p)])}</td>" for p in FAST_P)
        + "</tr>"
        for d in data["distribution"]
    )
    missed = (
        "".join(
            f"<li>{html.escape(r['entry'])} [{html.escape(r['group'])}]: {html.escape(r['why'])}</li>"
            for r in data["not_improved"]
        )
        or "<li>(none)</li>"
    )
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:2px 6px}table{border-collapse:collapse}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><p>{html.escape(counts_line(data))}</p>"
        f"<table><tr>{head}</tr>{body}</table><h2>Distribution</h2>"
        "<table><tr><th>over</th><th>timed and correct</th><th>geomean</th><th>median</th><th>&gt;2x</th>"
        f"<th>&gt;5x</th><th>fast_1</th><th>fast_1.5</th><th>fast_2</th></tr>{dist}</table>"
        f"{histogram_svg(data)}<h2>{NOT_IMPROVED}</h2><ul>{missed}</ul>"
        f"<h2>Tokens</h2><p>{html.escape(token_line(data['tokens']))}</p></body></html>\n"
    )


def render(rows: list[Row], fmt: str, title: str = "diagnose bench") -> str:
    data = summary(rows)
    if fmt == "json":
        return json.dumps(data, indent=2)
    if fmt == "csv":
        return render_csv(data)
    if fmt == "html":
        return render_html(data, title)
    return render_markdown(data, title)
