"""Text rendering of an Ascend `inspect` result: stages, the per-line fact table, the pass timeline,
annotated artefacts, and what this machine could not do. Pure functions of the result JSON (the
worker's, with `evidence` and `summary` added per kernel by `inspect.py`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from diagnose.ascend.facts.context import with_locations
from diagnose.ir.pass_analysis import OP_NAME
from diagnose.ir.render import MARK
from diagnose.ir.sourcemap import parse_mlir_ops
from diagnose.targets import lookup


def source_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def render_text(result: dict, passes: bool = False, stage: str | None = None) -> str:
    target = lookup(result["target"])
    stored = "  (stored result)" if result.get("from_cache") else ""
    toolchain = result.get("toolchain", {})
    title = f"{Path(result['file']).name}  target {target.name} ({target.device})"
    out = [f"{title}  triton-ascend {toolchain.get('triton-ascend', '?')}{stored}"]
    for k in result["kernels"]:
        out.append("")
        out.append(_header(k))
        out.append("  stages: " + " | ".join(_stage_text(s) for s in k.get("stages", [])))
        if "error" in k:
            out.append(f"  compile failed in {k['error'].get('stage') or '?'}: {k['error']['message']}")
            out += ["    " + line for line in k["error"].get("log", "").strip().splitlines()[-12:]]
        out += ["  note: " + note for note in k.get("notes", [])]
        if stage:
            out += _stage(k, stage)
        elif passes:
            out += timeline(k)
        else:
            out += _table(k)
    out.append("")
    out += not_here_lines(result)
    return "\n".join(out) + "\n"


def not_here_lines(result: dict) -> list[str]:
    """What this machine could not do, one line each (always printed: the reader must not guess)."""
    lines = []
    if result.get("npubin"):
        lines.append(f"  npubin (the NPU binary, bishengir's UB allocation): {result['npubin']}")
    if result.get("npu"):
        lines.append(f"  running and timing on an NPU: {result['npu']}")
    return (["not possible here:"] + lines) if lines else ["everything ran here: npubin built, NPU present"]


def _header(k: dict) -> str:
    bits = []
    if k.get("grid"):
        bits.append("grid=" + "x".join(map(str, k["grid"])))
    modes = {e["name"]: e for e in k.get("evidence", [])}.get("KernelMode")
    if modes:
        args = dict(modes["args"])
        bits.append(f"mix_mode={args.get('mix_mode')} parallel_mode={args.get('parallel_mode')}")
    options = k.get("options") or {}
    if options:
        bits.append("options " + ", ".join(f"{key}={value}" for key, value in sorted(options.items())))
    return f"== {k['title']}  " + "  ".join(bits)


def _stage_text(s: dict) -> str:
    if s["status"] == "ok":
        return f"{s['name']} ok {s['seconds'] * 1000:.0f} ms"
    if s["status"] == "unavailable":
        return f"{s['name']} not available here (see below)"
    return f"{s['name']} {s['status']}" + (f" ({s['message']})" if s.get("message") else "")


def _table(k: dict) -> list[str]:
    out = []
    sources: dict[str, list[str]] = {}
    for row in k.get("summary", []):
        lines = sources.setdefault(row["path"], source_lines(row["path"]))
        code = lines[row["line"] - 1].strip() if 0 < row["line"] <= len(lines) else ""
        out.append(f"  {Path(row['path']).name}:{row['line']:<4} | {code}")
        for kind in ("missed", "passed", "other"):
            out += [f"        {MARK[kind]} {text}" for text in row[kind]]
    return out


def timeline(k: dict) -> list[str]:
    """One row per pass: stage, name, wall time, module size before -> after, ops added / removed."""
    passes, snapshots = k.get("passes", []), k.get("snapshots", [])
    if not passes:
        return ["  (no per-pass IR: the compile did not keep it)"]
    inputs = k.get("stage_inputs", {})
    counts: dict[int, Counter] = {}

    def count(i: int) -> Counter:
        if i not in counts:
            counts[i] = Counter(OP_NAME.findall(snapshots[i]))
        return counts[i]

    out = [f"  {'#':>3} {'stage':<10} {'pass':<40} {'ms':>7} {'lines':>11}  ops added / removed"]
    previous: dict[str, int] = {}
    for p in passes:
        before = previous.get(p["stage"], inputs.get(p["stage"], p["snapshot"]))
        after = previous[p["stage"]] = p["snapshot"]
        if before == after:
            change = "(no change)"
        else:
            added, removed = count(after) - count(before), count(before) - count(after)
            change = " ".join(f"+{n} {op}" for op, n in added.most_common(4))
            change += "  " + " ".join(f"-{n} {op}" for op, n in removed.most_common(4))
        name = p["name"] if p.get("parent") is None else f"  {p['name']} (in {passes[p['parent']]['name']})"
        ms = f"{p['seconds'] * 1000:.1f}" if p.get("seconds") is not None else "-"
        lines = f"{snapshots[before].count(chr(10))}->{snapshots[after].count(chr(10))}"
        out.append(f"  {p['index']:>3} {p['stage']:<10} {name[:40]:<40} {ms:>7} {lines:>11}  {change.strip()}")
    if k.get("pipeline_matches_stage") is False:
        out.append(
            "  note: the per-pass run's final IR differs from the ttadapter stage's (diagnose's copy of the pipeline drifted)"
        )
    for stage_name, rows in k.get("pass_timing", {}).items():
        total = sum(seconds for _, seconds, depth in rows if depth == 0)
        out.append(f"  {stage_name} passes: {total * 1000:.1f} ms in all (MLIR timing report)")
    return out


def _stage(k: dict, stage: str) -> list[str]:
    if stage == "npubin":
        status = next((s for s in k.get("stages", []) if s["name"] == "npubin"), None)
        if status is None:
            return ["  -- npubin: this compile has no npubin stage"]
        extra = k.get("npubin") or {}
        detail = f": {extra.get('bytes')} bytes" if extra else ""
        return [
            f"  -- npubin {status['status']}{detail}" + (f" ({status['message']})" if status.get("message") else "")
        ]
    text = k.get("artefacts", {}).get(stage)
    if text is None:
        return [f"  -- no {stage} artefact; artefacts: {', '.join(k.get('artefacts', {}))}"]
    located = {op.ir_line: op.location for op in parse_mlir_ops(with_locations(text))}
    out = [f"  -- {stage} (source line | artefact line)"]
    for i, line in enumerate(text.splitlines(), 1):
        loc = located.get(i)
        where = f"{Path(loc.path).name}:{loc.line}" if loc else ""
        out.append(f"  {where:>22} | {line}")
    return out
