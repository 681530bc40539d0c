"""Questions about a compile's passes, answered from the IR kept after every pass.

- `timeline(record)`: per pass, the IR size before and after and the ops it added and removed;
- `pass_diff(record, name)`: how a pass changed the module, as a unified diff without locations;
- `op_history(record, op)`: which passes introduced or removed an op (optionally at one user line).

All need a compile made with `snapshots=True` (`compile_launch(..., snapshots=True)`); they raise
`UsageError` otherwise, or for a pass name the pipeline does not have (listing the names it has).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass

from diagnose.errors import UsageError
from diagnose.ir.compile import CompileRecord
from diagnose.ir.passes import PassStep
from diagnose.ir.sourcemap import parse_mlir_ops

# %x = tt.load %p : ...     "tt.reduce"(%x) ({     llvm.store %v, %p : f32, !llvm.ptr<3>
OP_NAME = re.compile(r'^\s*(?:%[-\w#:, %]+?\s*=\s*)?"?([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"?[\s(<{:]', re.MULTILINE)
# ... loc(#loc12)   at the end of an op line;   %a_ptr: !tt.ptr<f16> loc("a_ptr"(#loc))   in a signature
LOC = re.compile(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
# Above this size a snapshot is LLVM-dialect IR: ops are counted, not mapped to lines.
MAPPED_LIMIT = 400_000


@dataclass(frozen=True)
class PassRow:
    """One pass of the timeline: what ran, how long, how the module changed."""

    index: int
    stage: str
    name: str
    seconds: float
    lines_before: int
    lines_after: int
    added: tuple[tuple[str, int], ...]
    removed: tuple[tuple[str, int], ...]
    diagnostics: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed) or self.lines_before != self.lines_after


def _snapshots(record: CompileRecord) -> tuple[dict[str, int], list[str]]:
    kept = record.snapshots()
    if not kept or any(s.snapshot < 0 for s in record.steps):
        raise UsageError("the IR after every pass was not kept: compile with snapshots=True (inspect --passes)")
    return kept


def _before(record: CompileRecord, step: PassStep, stage_inputs: dict[str, int]) -> int:
    first = next(s for s in record.steps if s.stage == step.stage)
    if step.index == first.index:
        return stage_inputs.get(step.stage, record.steps[step.index - 1].snapshot if step.index else 0)
    return record.steps[step.index - 1].snapshot


def timeline(record: CompileRecord) -> list[PassRow]:
    stage_inputs, texts = _snapshots(record)
    counts: dict[int, Counter] = {}

    def count(i: int) -> Counter:
        if i not in counts:
            counts[i] = Counter(OP_NAME.findall(texts[i]))
        return counts[i]

    rows = []
    for step in record.steps:
        before, after = _before(record, step, stage_inputs), step.snapshot
        added = count(after) - count(before) if before != after else Counter()
        removed = count(before) - count(after) if before != after else Counter()
        rows.append(
            PassRow(
                index=step.index,
                stage=step.stage,
                name=step.name,
                seconds=step.seconds,
                lines_before=texts[before].count("\n"),
                lines_after=texts[after].count("\n"),
                added=tuple(sorted(added.items(), key=lambda kv: -kv[1])),
                removed=tuple(sorted(removed.items(), key=lambda kv: -kv[1])),
                diagnostics=len(
                    [line for line in step.diagnostics.splitlines() if ": remark:" in line or ": warning:" in line]
                ),
            )
        )
    return rows


def find_steps(record: CompileRecord, name: str) -> list[PassStep]:
    """Steps named `name` (`tritongpu-pipeline`), or one of them by `name#N` (0-based) or index."""
    base, _, nth = name.partition("#")
    if base.isdigit():
        matches = [s for s in record.steps if s.index == int(base)]
    else:
        matches = [s for s in record.steps if s.name == base or s.add_fn.endswith("." + base)]
    if nth.isdigit():
        matches = matches[int(nth) : int(nth) + 1]
    if not matches:
        known = ", ".join(dict.fromkeys(s.name for s in record.steps))
        raise UsageError(f"no pass {name!r} in this compile; passes: {known}")
    return matches


def strip_locations(text: str) -> list[str]:
    return [LOC.sub("", line) for line in text.splitlines() if not line.startswith("#loc")]


def pass_diff(record: CompileRecord, name: str, context: int = 2) -> str:
    """Unified diffs (locations stripped) of every run of the pass `name` that changed the module."""
    stage_inputs, texts = _snapshots(record)
    out = []
    for step in find_steps(record, name):
        before, after = _before(record, step, stage_inputs), step.snapshot
        label = f"{step.stage}/{step.name} (pass {step.index})"
        if before == after:
            out.append(f"--- {label}: no change\n")
            continue
        diff = difflib.unified_diff(
            strip_locations(texts[before]),
            strip_locations(texts[after]),
            f"before {label}",
            f"after {label}",
            n=context,
            lineterm="",
        )
        out.append("\n".join(diff) + "\n")
    return "\n".join(out)


@dataclass(frozen=True)
class OpChange:
    """A pass that changed how many `op` ops there are (at `line`, when asked per line)."""

    index: int
    stage: str
    name: str
    before: int
    after: int


def op_history(record: CompileRecord, op: str, line: int | None = None) -> list[OpChange]:
    """Every pass that introduced or removed `op` (e.g. `ttg.convert_layout`), at a user line or anywhere."""
    stage_inputs, texts = _snapshots(record)
    counted: dict[int, int] = {}

    def count(i: int) -> int:
        if i not in counted:
            if line is None or len(texts[i]) > MAPPED_LIMIT:
                counted[i] = OP_NAME.findall(texts[i]).count(op) if line is None else 0
            else:
                counted[i] = sum(
                    1 for o in parse_mlir_ops(texts[i]) if o.name == op and o.location and o.location.line == line
                )
        return counted[i]

    changes = []
    for step in record.steps:
        b, a = count(_before(record, step, stage_inputs)), count(step.snapshot)
        if a != b:
            changes.append(OpChange(step.index, step.stage, step.name, b, a))
    return changes
