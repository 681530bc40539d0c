"""Text rendering of an `inspect` result (the JSON the worker returns): the per-line fact table,
the pass timeline, pass diffs and annotated artefacts. Pure functions of that JSON."""

from __future__ import annotations

from pathlib import Path

from diagnose.targets import lookup

MARK = {"missed": "!", "passed": "+", "other": "."}


def _source_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def render_text(result: dict, passes: bool = False, diff_pass: str | None = None, stage: str | None = None) -> str:
    target = lookup(result["target"])
    answered = "  (stored result)" if result.get("from_cache") else ""
    out = [f"{Path(result['file']).name}  target {target.name} ({target.device}){answered}"]
    for k in result["kernels"]:
        out.append("")
        out.append(_header(k))
        if "error" in k:
            failed = "no launch" if k["error"].get("stage") == "launch" else "compile failed"
            out.append(f"  {failed}: {k['error']['message']}")
            out += ["    " + line for line in k["error"].get("log", "").strip().splitlines()[-12:]]
            continue
        if stage:
            out += _stage(k["stage"])
        elif diff_pass:
            out.append(k.get("diff", "").rstrip())
        elif passes:
            out += _timeline(k.get("timeline", []))
        else:
            out += _table(k)
    return "\n".join(out) + "\n"


def _header(k: dict) -> str:
    md = k.get("metadata", {})
    bits = [f"{key}={md[key]}" for key in ("num_warps", "num_stages", "shared") if key in md]
    if k.get("grid"):
        bits.append("grid=" + "x".join(map(str, k["grid"])))
    if k.get("hash"):
        bits.append(f"hash {k['hash'][:12]}")
    if "seconds" in k:
        bits.append(f"{'from cache' if k.get('cache_hit') else 'compiled in'} {k['seconds']:.2f}s")
    return f"== {k['title']}  " + "  ".join(bits)


def _table(k: dict) -> list[str]:
    out = []
    sources: dict[str, list[str]] = {}
    for row in k.get("summary", []):
        lines = sources.setdefault(row["path"], _source_lines(row["path"]))
        code = lines[row["line"] - 1].strip() if 0 < row["line"] <= len(lines) else ""
        out.append(f"  {Path(row['path']).name}:{row['line']:<4} | {code}")
        for kind in ("missed", "passed", "other"):
            out += [f"        {MARK[kind]} {text}" for text in row[kind]]
    return out


def _timeline(rows: list[dict]) -> list[str]:
    out = [f"  {'#':>3} {'stage':<11} {'pass':<44} {'ms':>7} {'lines':>13}  ops added / removed"]
    for r in rows:
        if not r["changed"] and not r["diagnostics"]:
            ops = "(no change)"
        else:
            ops = (
                " ".join(f"+{n} {op}" for op, n in r["added"][:4])
                + "  "
                + " ".join(f"-{n} {op}" for op, n in r["removed"][:4])
            )
        remarks = f"  [{r['diagnostics']} remarks]" if r["diagnostics"] else ""
        lines = f"{r['lines_before']}->{r['lines_after']}"
        out.append(
            f"  {r['index']:>3} {r['stage']:<11} {r['name'][:44]:<44} {r['seconds'] * 1000:>7.1f} {lines:>13}  {ops.strip()}{remarks}"
        )
    return out


def _stage(stage: dict) -> list[str]:
    out = [f"  -- {stage['stage']} (source line | artefact line)"]
    for line, name, text in stage["lines"]:
        where = f"{name}:{line}" if line else ""
        out.append(f"  {where:>22} | {text}")
    return out
