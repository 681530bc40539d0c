"""The ttadapter pass pipeline, and the per-pass dumps and timing reports MLIR prints.

triton-ascend's `ttadapter` stage (`ttir_to_linalg` in `backends/ascend/compiler.py`, 3.2.0) runs
the bundled `triton-adapter-opt` once, as a subprocess, with a fixed list of passes whose options
come from the compile's metadata. There is no hook between those passes, so for per-pass IR we run
the same binary on the same TTIR with the same list (`adapter_pipeline`, a copy of that function's
command) plus `--mlir-print-ir-after-all --mlir-timing --mlir-print-debuginfo`; the caller checks
that the final module equals the stage's own output, so a drift of this copy is seen, not trusted.

The TTIR stage's passes come from Triton's own switches, `MLIR_ENABLE_DUMP=1` (the IR *before*
every pass) and `MLIR_ENABLE_TIMING=1`, read by `pm.enable_debug()` in `make_ttir`.

Parsers here are pure functions of the text MLIR writes to stderr.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The extra flags of our own run of triton-adapter-opt (the stage adds only --mlir-print-debuginfo).
DUMP_FLAGS = ("--mlir-print-ir-after-all", "--mlir-timing", "--mlir-print-debuginfo")

# // -----// IR Dump After TritonToUnstructure (triton-to-unstructure) //----- //
# // -----// IR Dump Before Canonicalizer (canonicalize) ('tt.func' operation: @k) //----- //
DUMP_HEADER = re.compile(
    r"^// -----// IR Dump (?P<when>Before|After) (?P<name>\S+) \((?P<arg>[\w.-]+)\)(?: \('(?P<scope>[\w.]+)' .*\))? //----- //$"
)
#     0.0018 (  6.1%)  TritonToUnstructure            0.0082 ( 28.2%)    'builtin.module' Pipeline
TIMING_ROW = re.compile(r"^\s+(?P<seconds>-?\d+\.\d+) \(\s*-?[\d.]+%\)(?P<indent>\s+)(?P<name>\S.*?)\s*$")
TIMING_NOT_PASSES = ("Parser", "Output", "Rest", "Total")


@dataclass(frozen=True)
class PassDump:
    """One pass as a dump shows it: display name (`TritonToUnstructure`), argument
    (`triton-to-unstructure`), the op it ran on when the header says (`tt.func`) and the module text."""

    name: str
    arg: str
    ir: str
    scope: str | None = None


@dataclass(frozen=True)
class PassTiming:
    """One row of an MLIR timing report: a pass (or nested pipeline), wall seconds, nesting depth."""

    name: str
    seconds: float
    depth: int


def adapter_pipeline(metadata: dict) -> list[str]:
    """The pass flags `ttir_to_linalg` gives triton-adapter-opt (triton-ascend 3.2.0, named_ops=True)."""
    on_950 = metadata["compile_on_910_95"]
    simt = metadata["force_simt_template"]
    flags = ["--triton-linearize"] if metadata.get("enable_linearize") else []
    return flags + [
        f"--discrete-mask-access-conversion=compile-on-910-95={on_950} force-simt-template={simt}",
        "--triton-to-annotation",
        f"--triton-to-unstructure=compile-on-910-95={on_950} force-simt-template={simt}",
        "--triton-to-hivm",
        "--triton-to-hfusion",
        "--triton-to-llvm",
        "--bubble-up-operation",
        (
            "--triton-to-linalg=global-kernel=false named-ops=True "
            f"enable-nd2nz-on-vector={metadata['enable_nd2nz_on_vector']} "
            f"enable-select-analysis={metadata['enable_select_analysis']} compile-on-910-95={on_950}"
        ),
    ]


def split_dumps(text: str, when: str = "After") -> list[PassDump]:
    """The dumps of one kind (`After` from --mlir-print-ir-after-all, `Before` from MLIR_ENABLE_DUMP)
    in the order the passes ran; the timing report, if any, is cut off the last one."""
    dumps: list[PassDump] = []
    current: tuple[str, str, str | None] | None = None
    body: list[str] = []

    def flush() -> None:
        if current is not None:
            dumps.append(PassDump(current[0], current[1], "\n".join(body).strip("\n") + "\n", current[2]))

    for line in text.splitlines():
        m = DUMP_HEADER.match(line)
        if m:
            flush()
            current = (m["name"], m["arg"], m["scope"]) if m["when"] == when else None
            body = []
        elif line.startswith("===---") and current is not None:
            flush()  # the timing report follows the last dump
            current = None
        elif current is not None:
            body.append(line)
    flush()
    return dumps


def parse_timing(text: str) -> list[PassTiming]:
    """Pass rows of the `... Execution time report ...` MLIR prints (analyses `(A)` left out)."""
    start = text.rfind("Execution time report")
    if start < 0:
        return []
    rows = []
    for line in text[start:].splitlines():
        m = TIMING_ROW.match(line)
        if not m or m["name"].startswith("(A)") or m["name"] in TIMING_NOT_PASSES:
            continue
        rows.append(PassTiming(m["name"], float(m["seconds"]), (len(m["indent"]) - 2) // 2))
    return rows


def pass_seconds(names: list[str], timing: list[PassTiming]) -> list[float | None]:
    """Wall time per pass run, where the report allows it: a pass whose name appears once in the
    runs and once in the report gets that row; repeated passes (CSE, Canonicalizer) share rows that
    MLIR merges across nested pipelines, so they get None rather than a guess."""
    runs = {name: names.count(name) for name in names}
    rows: dict[str, list[PassTiming]] = {}
    for row in timing:
        rows.setdefault(row.name, []).append(row)
    return [rows[n][0].seconds if runs[n] == 1 and len(rows.get(n, [])) == 1 else None for n in names]


def pipeline_args(pipeline: list[str]) -> list[str]:
    """`--triton-to-unstructure=compile-on-910-95=True ...` -> `triton-to-unstructure`."""
    return [flag.lstrip("-").split("=", 1)[0] for flag in pipeline]


def nesting(dumps: list[PassDump], top_level: list[str] | None, when: str) -> list[int | None]:
    """For each dump, the index of the pass that ran it as part of its own work, or None.

    A pass that runs a nested pipeline (TritonToUnstructure cleans up with CSE and canonicalize)
    makes MLIR print the nested passes' dumps *inside* its own run: before its After dump, or after
    its Before dump. A nested pass is one not in the top-level list (`top_level`, the pipeline's
    pass arguments), or, when that list is unknown, one whose dump is scoped to a function.
    """
    nested = [
        (d.arg not in top_level) if top_level is not None else (d.scope not in (None, "builtin.module")) for d in dumps
    ]
    parents: list[int | None] = []
    for i, is_nested in enumerate(nested):
        if not is_nested:
            parents.append(None)
        elif when == "After":
            parents.append(next((j for j in range(i + 1, len(dumps)) if not nested[j]), None))
        else:
            parents.append(next((j for j in range(i - 1, -1, -1) if not nested[j]), None))
    return parents
