"""The records every layer of `diagnose` speaks: small frozen dataclasses.

`Evidence` is modelled on LLVM optimization remarks: it reads as a sentence (`str(evidence)`) and parses
as data (`to_dict`). A `Finding` is a diagnosis backed by at least one `Evidence`; a `Candidate` is a
rewritten kernel; a `Verdict` says whether a candidate is correct, honest and how fast it ran. A `Report`
gathers them for one task and is the source of truth every output format renders from.

All records convert to plain JSON-ready dicts with `to_dict()`; `diagnose/report/report.schema.json`
describes the result and is versioned by `SCHEMA_VERSION`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

SCHEMA_VERSION = 1

EvidenceKind = Literal["passed", "missed", "analysis", "metric"]
Severity = Literal["error", "warning", "info"]
Confidence = Literal["high", "medium", "low"]
Safety = Literal["safe", "unsafe"]


def to_jsonable(value: Any) -> Any:
    """Dataclasses, tuples and mappings to plain JSON values (tuples become lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


class Record:
    """Mixin: `to_dict()` for every record."""

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)


@dataclass(frozen=True)
class Location(Record):
    """A place in a source file; lines are 1-based, columns 0-based (as Python's ast)."""

    path: str
    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Evidence(Record):
    """One observed fact, as an LLVM remark: who saw it, what, where, with typed arguments.

    `stage` is the escalation level that produced it (`triage`, `profile`, `ir`, `pass`, `verify`);
    `source` the artefact it was read from (`ast`, `ttgir`, `ptx`, `ncu`, `pass:tritongpu-pipeline`, ...);
    `name` a stable id (`NarrowGlobalLoad`); `kind` is passed / missed / analysis / metric; `raw` is the
    verbatim line it came from.
    """

    stage: str
    source: str
    name: str
    kind: EvidenceKind
    location: Location | None = None
    args: tuple[tuple[str, Any], ...] = ()
    raw: str | None = None

    def arg(self, key: str, default: Any = None) -> Any:
        return dict(self.args).get(key, default)

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        args = ", ".join(f"{k}={v}" for k, v in self.args)
        return f"{where}{self.kind} {self.name} [{self.source}]" + (f" ({args})" if args else "")


@dataclass(frozen=True)
class Finding(Record):
    """A diagnosis: a code from a rule table, a terse message, and the evidence behind it."""

    code: str
    message: str
    severity: Severity
    confidence: Confidence
    location: Location
    evidence: tuple[Evidence, ...]
    secondary: tuple[Location, ...] = ()
    rewrites: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.evidence:
            raise ValueError(f"finding {self.code} has no evidence")


@dataclass(frozen=True)
class Candidate(Record):
    """A rewritten kernel file and where it came from."""

    id: str
    source: str
    diff: str
    made_by: tuple[str, ...]
    safety: Safety = "safe"
    answers: tuple[str, ...] = ()
    predicted_gain: float | None = None
    # The launch-config searches behind it: per search its summary, then one line per configuration
    # (values, what became of it, seconds measured or estimated).
    searched: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseResult(Record):
    """Correctness of one (input group, seed) case, one output compared per entry of `outputs`."""

    group: str
    seed: int
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class CheckResult(Record):
    """One anti-cheat check: its stable name, whether the candidate passed it, and why not."""

    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class Timing(Record):
    """The timing of one variant (candidate, initial, eager, compile) on one input group.

    `median_ms is None` means not timed; `note` then says why.
    """

    variant: str
    group: str
    median_ms: float | None = None
    p20_ms: float | None = None
    p80_ms: float | None = None
    iqr_ms: float | None = None
    cv: float | None = None
    reps: int = 0
    stable: bool = False
    note: str = ""


@dataclass(frozen=True)
class Failure(Record):
    """Why a candidate could not be run to the end: a structured failure, never a crash of the parent.

    `kind` is one of: load_error, exception, timeout, crashed, out_of_memory, cuda_error, protocol.
    """

    kind: str
    message: str
    log_tail: str = ""


@dataclass(frozen=True)
class Verdict(Record):
    """Everything the harness decided about one candidate."""

    passed: bool
    device: str
    cases: tuple[CaseResult, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    timings: tuple[Timing, ...] = ()
    failure: Failure | None = None
    versions: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    # (step, wall seconds) of the harness: reference, candidate, compare, ghost, timing, total.
    phases: tuple[tuple[str, float], ...] = ()

    @property
    def correct(self) -> bool:
        return self.failure is None and bool(self.cases) and all(c.passed for c in self.cases)

    def timing(self, variant: str, group: str) -> Timing | None:
        return next((t for t in self.timings if t.variant == variant and t.group == group), None)

    def speedups(self, over: str) -> dict[str, float]:
        """Candidate speedup over a baseline variant, per group: a ratio of medians from the same run."""
        out = {}
        for t in self.timings:
            if t.variant != "candidate" or t.median_ms is None:
                continue
            base = self.timing(over, t.group)
            if base is not None and base.median_ms is not None and t.median_ms > 0:
                out[t.group] = base.median_ms / t.median_ms
        return out


@dataclass(frozen=True)
class TraceStep(Record):
    """One decision of the escalation, with its reason."""

    level: str
    action: str
    reason: str


@dataclass(frozen=True)
class Report(Record):
    """The result of one request for one task; every output format renders from it."""

    task: str
    target: str
    device: str
    findings: tuple[Finding, ...] = ()
    trace: tuple[TraceStep, ...] = ()
    candidates: tuple[tuple[Candidate, Verdict], ...] = ()
    best: str | None = None
    environment: tuple[tuple[str, str], ...] = ()
    schema_version: int = field(default=SCHEMA_VERSION)

    def to_dict(self) -> dict[str, Any]:
        data = to_jsonable(self)
        data["candidates"] = [
            {"candidate": c.to_dict(), "verdict": v.to_dict()} for c, v in self.candidates
        ]
        return data


def location_from_dict(data: dict | None) -> Location | None:
    return Location(**data) if data else None


def evidence_from_dict(data: dict) -> Evidence:
    return Evidence(data["stage"], data["source"], data["name"], data["kind"], location_from_dict(data.get("location")),
                    tuple(tuple(pair) for pair in data.get("args", [])), data.get("raw"))


def finding_from_dict(data: dict) -> Finding:
    """A `Finding` back from `Finding.to_dict()` (reports, checkpoints)."""
    return Finding(data["code"], data["message"], data["severity"], data["confidence"],
                   location_from_dict(data["location"]), tuple(evidence_from_dict(e) for e in data["evidence"]),
                   tuple(location_from_dict(s) for s in data.get("secondary", [])), tuple(data.get("rewrites", [])))
