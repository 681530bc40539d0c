"""PassIntroduced: the compiler pass that first produced each Ascend IR marker, per source line.

## What it reads
The IR after every pass of the TTIR and ttadapter stages (a compile with `passes=True`), each
line's location resolved to the user's Python line, and these markers:

| marker | IR text | meaning |
|---|---|---|
| `DiscreteMemAccess` | `{DiscreteMemAccess}` | an element of a scalarized access |
| `ExtractedLoadOrStore` | `} {ExtractedLoadOrStore}` | the scalar loop around it |
| `PaddingFill` | `{hivm.unlikely_condition}` | the fill of a masked load's buffer |
| `SimtAccess` | `call @triton_indirect_load` / `_store` | an access sent to the SIMT units |
| `UbGather` | `call @triton_gather` | a `tl.gather` in UB |
| `CubeMatmul` | `linalg.matmul` | a `tl.dot` for the cube unit |
| `MixMode` | `mix_mode = "mix"` | the kernel became a cube + vector kernel |

A pass that runs a nested pipeline (TritonToUnstructure cleans up with CSE and canonicalize)
prints the nested passes' IR inside its own run; a marker first seen after a nested pass is
credited to the pass that ran it, and the nested one is named in `via`.

## Kinds
`analysis`, source `pass:<pass argument>` (`pass:triton-to-unstructure`), one per (marker, line),
with `marker`, `pass` (its display name), `stage` and `via`. It answers "which pass did this", so
that a fix can be aimed at that pass's conditions (docs of TritonToStructured / TritonToUnstructure).
"""

from __future__ import annotations

from diagnose.ascend.facts.context import AscendFactContext, split_loc
from diagnose.ir.sourcemap import FILE_LINE_COL, LOC_DEF, resolve_loc, user_location
from diagnose.records import Evidence, Location

MARKERS = (
    ("DiscreteMemAccess", "{DiscreteMemAccess}"),
    ("ExtractedLoadOrStore", "{ExtractedLoadOrStore}"),
    ("PaddingFill", "{hivm.unlikely_condition}"),
    ("SimtAccess", "call @triton_indirect_"),
    ("UbGather", "call @triton_gather"),
    ("CubeMatmul", "linalg.matmul"),
    ("MixMode", 'mix_mode = "mix"'),
)


def pass_origin(ctx: AscendFactContext) -> list[Evidence]:
    passes, snapshots = ctx.kernel.get("passes") or [], ctx.kernel.get("snapshots") or []
    if not passes:
        return []
    found: dict[int, dict] = {}
    first: dict[tuple[str, str, int], tuple[dict, str, Location]] = {}
    for p in passes:
        if p["snapshot"] not in found:
            found[p["snapshot"]] = markers_in(snapshots[p["snapshot"]])
        for key, (raw, location) in found[p["snapshot"]].items():
            if key not in first:
                first[key] = (p, raw, location)
    out = []
    for (marker, _path, _line), (p, raw, location) in first.items():
        owner = passes[p["parent"]] if p.get("parent") is not None else p
        args = {
            "marker": marker,
            "pass": owner["name"],
            "stage": owner["stage"],
            "via": p["name"] if owner is not p else None,
        }
        out.append(ctx.evidence("PassIntroduced", "analysis", f"pass:{owner['arg']}", location, args, raw))
    return out


def markers_in(text: str) -> dict[tuple[str, str, int], tuple[str, Location]]:
    """(marker, file, line) -> (the IR line, its user location) for every marker in one module."""
    lines = text.splitlines()
    aliases = {m[1]: m[2] for m in map(LOC_DEF.match, lines) if m}
    out = {}
    for raw in lines:
        hits = [name for name, needle in MARKERS if needle in raw]
        if not hits:
            continue
        body, loc = split_loc(raw)
        frames = [(f, int(ln), int(c)) for f, ln, c in FILE_LINE_COL.findall(resolve_loc(loc, aliases))] if loc else []
        location = user_location(frames)
        if location is None:
            continue
        for name in hits:
            out.setdefault((name, location.path, location.line), (body.strip()[:300], location))
    return out
