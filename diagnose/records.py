"""The records every layer of `diagnose` speaks: small frozen dataclasses.

`Evidence` is modelled on LLVM optimization remarks: it reads as a sentence (`str(evidence)`) and parses
as data (`to_dict`). A `Finding` is a diagnosis backed by at least one `Evidence`; a `Candidate` is a
rewritten kernel; a `Verdict` says whether a candidate is correct, honest and how fast it ran. A `Report`
gathers them for one task and is the source of truth every output format renders from.

All records convert to plain JSON-ready dicts with `to_dict()`; `diagnose/report/report.schema.json`
describes the result and is versioned by `SCHEMA_VERSION`. The `*_from_dict` functions at the end read
them back (a `report.json`, a checkpoint), reports written by older versions included: what a field
that version did not have defaults to, a key it did not write stays unwritten.
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
    """Records (their `to_dict()`), dataclasses, tuples and mappings to plain JSON values (tuples become lists)."""
    if isinstance(value, Record):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return fields_to_json(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


def fields_to_json(value: Any) -> dict[str, Any]:
    """A dataclass's fields, in order, as JSON values."""
    return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}


class Record:
    """Mixin: `to_dict()` for every record (a record whose JSON differs overrides it)."""

    def to_dict(self) -> dict[str, Any]:
        return fields_to_json(self)


def without_none(record: Record, *names: str) -> dict[str, Any]:
    """The record's fields as JSON, without those of `names` that are None (keys an older version did
    not write, or that only some producers fill)."""
    data = fields_to_json(record)
    for name in names:
        if getattr(record, name) is None:
            del data[name]
    return data


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
    # Every rewrite from the task as given to this candidate, its own last: set by the agent's propose
    # node (a base candidate's chain plus `made_by`); None elsewhere, and then not written.
    lineage: tuple[str, ...] | None = None
    # Where the task as given does not compile for the target and this candidate does: the original's
    # error (a repair is worth having at any speed: the original cannot run there). None elsewhere.
    repairs: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return without_none(self, "lineage", "repairs")


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
        """Candidate speedup over a baseline variant, per group: a ratio of medians taken with one protocol
        on one device (the baselines in a worker of their own, `diagnose/verify/timing_jobs.py`)."""
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
    """One decision of the escalation, with its reason; `at` (epoch seconds, when the step ended) shows where
    a run's time went (not written when None)."""

    level: str
    action: str
    reason: str
    at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return without_none(self, "at")


@dataclass(frozen=True)
class Work(Record):
    """What one input group asks for: minimal bytes, FLOPs, the dtype whose matmul rate applies.

    `bytes_source` / `flops_source` say where each number came from (`inputs+outputs`,
    `FlopCounterMode`, `ROOFLINE hint`, or `none` when nothing counted FLOPs).
    """

    group: str
    bytes: float
    flops: float
    dtype: str
    bytes_source: str = "inputs+outputs"
    flops_source: str = "FlopCounterMode"

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class Roof(Record):
    """The two ceilings a roofline needs, and whether they were measured."""

    bytes_per_s: float
    flops_per_s: float | None
    dtype: str
    measured: bool

    @property
    def ridge(self) -> float | None:
        """Arithmetic intensity (FLOP/byte) where the two ceilings meet."""
        return self.flops_per_s / self.bytes_per_s if self.flops_per_s else None


@dataclass(frozen=True)
class Roofline(Record):
    """The profile level's roofline data in a run's report (`diagnose/agent/tools.py` gathers it).

    What the plot needs: the work per input group, the roof, whether the profile was timed, the stem of
    the file it profiled and its static estimate per group (ms). When a candidate was timed, the bound
    (ms) of the group farthest from it (`bound_ms`, `group`) and of every group (`bounds_ms`). A field
    that is None was not known (an older run wrote only `bound_ms` and `group`) and is not written.
    """

    work: tuple[Work, ...] | None = None
    roof: Roof | None = None
    timed: bool | None = None
    profiled: str | None = None
    estimate_ms: tuple[tuple[str, float], ...] | None = None
    bound_ms: float | None = None
    group: str | None = None
    bounds_ms: tuple[tuple[str, float], ...] | None = None

    @property
    def bounds(self) -> dict[str, float]:
        """The bound (ms) per input group: `bounds_ms`, or an older run's one `bound_ms`."""
        if self.bounds_ms:
            return dict(self.bounds_ms)
        return {self.group: self.bound_ms} if self.bound_ms and self.group is not None else {}

    def to_dict(self) -> dict[str, Any]:
        data = without_none(self, *(f.name for f in dataclasses.fields(self)))
        for name in ("estimate_ms", "bounds_ms"):  # mappings in JSON, pairs here
            if name in data:
                data[name] = dict(data[name])
        return data


@dataclass(frozen=True)
class Report(Record):
    """The result of one request for one task; every output format renders from it.

    `diagnose check` fills the first fields; `diagnose optimize` the rest too: the user's module a
    generated task replays (`module`), the verdict of the task as given (`baseline`), the evidence of
    the levels beyond triage (`evidence`), the profile's `roofline`, the deepest level reached and the
    run's wall time. Those run fields are written together, when any of them is set (`is_run`).
    """

    task: str
    target: str
    device: str
    findings: tuple[Finding, ...] = ()
    trace: tuple[TraceStep, ...] = ()
    candidates: tuple[tuple[Candidate, Verdict], ...] = ()
    best: str | None = None
    environment: tuple[tuple[str, str], ...] = ()
    schema_version: int = field(default=SCHEMA_VERSION)
    module: str | None = None
    baseline: Verdict | None = None
    evidence: tuple[Evidence, ...] = ()
    roofline: Roofline | None = None
    deepest_level: str | None = None
    wall_s: float | None = None

    @property
    def is_run(self) -> bool:
        """Whether this is an optimize run's report (it has the run fields), not a check's."""
        return (
            self.baseline is not None
            or bool(self.evidence)
            or self.roofline is not None
            or self.deepest_level is not None
            or self.wall_s is not None
        )

    @property
    def best_entry(self) -> tuple[Candidate, Verdict] | None:
        """The best candidate with its verdict, when there is one."""
        return next(((c, v) for c, v in self.candidates if c.id == self.best), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `report.schema.json`, keys in the order `report.json` has always had them."""
        data: dict[str, Any] = {"schema_version": self.schema_version, "task": self.task}
        if self.module is not None:
            data["module"] = self.module
        data.update(
            {
                "target": self.target,
                "device": self.device,
                "findings": [f.to_dict() for f in self.findings],
                "trace": [s.to_dict() for s in self.trace],
                "candidates": [{"candidate": c.to_dict(), "verdict": v.to_dict()} for c, v in self.candidates],
                "best": self.best,
                "environment": to_jsonable(self.environment),
            }
        )
        if self.is_run:
            data.update(
                {
                    "baseline": self.baseline.to_dict() if self.baseline is not None else None,
                    "evidence": [e.to_dict() for e in self.evidence],
                    "roofline": self.roofline.to_dict() if self.roofline is not None else None,
                    "deepest_level": self.deepest_level,
                    "wall_s": self.wall_s,
                }
            )
        return data


def known(cls: type, data: dict) -> dict[str, Any]:
    """The keys of `data` that are fields of the record `cls` (a newer version's extra keys are dropped)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def pairs(data: Any) -> tuple[tuple[Any, ...], ...]:
    """JSON pairs (`[[k, v], ...]`, or a mapping) as a tuple of tuples."""
    items = data.items() if isinstance(data, dict) else (data or ())
    return tuple(tuple(pair) for pair in items)


def location_from_dict(data: dict | None) -> Location | None:
    return Location(**known(Location, data)) if data else None


def evidence_from_dict(data: dict) -> Evidence:
    return Evidence(
        data["stage"],
        data["source"],
        data["name"],
        data["kind"],
        location_from_dict(data.get("location")),
        tuple(tuple(pair) for pair in data.get("args", [])),
        data.get("raw"),
    )


def finding_from_dict(data: dict) -> Finding:
    """A `Finding` back from `Finding.to_dict()` (reports, checkpoints)."""
    return Finding(
        data["code"],
        data["message"],
        data["severity"],
        data["confidence"],
        location_from_dict(data["location"]),
        tuple(evidence_from_dict(e) for e in data["evidence"]),
        tuple(location_from_dict(s) for s in data.get("secondary", [])),
        tuple(data.get("rewrites", [])),
    )


def candidate_from_dict(data: dict) -> Candidate:
    """A `Candidate` back from `Candidate.to_dict()` (an older report may lack `searched` and `lineage`)."""
    lineage = data.get("lineage")
    return Candidate(
        data["id"],
        data["source"],
        data["diff"],
        tuple(data["made_by"]),
        data.get("safety", "safe"),
        tuple(data.get("answers", ())),
        data.get("predicted_gain"),
        tuple(data.get("searched", ())),
        tuple(lineage) if lineage is not None else None,
        data.get("repairs"),
    )


def verdict_from_dict(data: dict) -> Verdict:
    """A `Verdict` back from `Verdict.to_dict()` (an older report may lack `phases`)."""
    failure = data.get("failure")
    return Verdict(
        data["passed"],
        data["device"],
        tuple(CaseResult(**known(CaseResult, c)) for c in data.get("cases", ())),
        tuple(CheckResult(**known(CheckResult, c)) for c in data.get("checks", ())),
        tuple(Timing(**known(Timing, t)) for t in data.get("timings", ())),
        Failure(**known(Failure, failure)) if failure else None,
        pairs(data.get("versions")),
        tuple(data.get("notes", ())),
        pairs(data.get("phases")),
    )


def trace_step_from_dict(data: dict) -> TraceStep:
    return TraceStep(data["level"], data["action"], data["reason"], data.get("at"))


def roofline_from_dict(data: dict | None) -> Roofline | None:
    """A `Roofline` back from `Roofline.to_dict()`; None for none (or an empty one)."""
    if not data:
        return None
    work, roof = data.get("work"), data.get("roof")
    estimate, bounds = data.get("estimate_ms"), data.get("bounds_ms")
    return Roofline(
        tuple(Work(**known(Work, w)) for w in work) if work is not None else None,
        Roof(**known(Roof, roof)) if roof else None,
        data.get("timed"),
        data.get("profiled"),
        pairs(estimate) if estimate is not None else None,
        data.get("bound_ms"),
        data.get("group"),
        pairs(bounds) if bounds is not None else None,
    )


def report_from_dict(data: dict) -> Report:
    """A `Report` back from `Report.to_dict()` (a `report.json`), of this version or an older one: a report
    without the run fields (`baseline`, `evidence`, `roofline`, `deepest_level`, `wall_s`) reads with
    their defaults, and writes back without them."""
    baseline = data.get("baseline")
    return Report(
        task=data["task"],
        target=data["target"],
        device=data["device"],
        findings=tuple(finding_from_dict(f) for f in data.get("findings", ())),
        trace=tuple(trace_step_from_dict(s) for s in data.get("trace", ())),
        candidates=tuple(
            (candidate_from_dict(e["candidate"]), verdict_from_dict(e["verdict"])) for e in data.get("candidates", ())
        ),
        best=data.get("best"),
        environment=pairs(data.get("environment")),
        schema_version=data.get("schema_version", SCHEMA_VERSION),
        module=data.get("module"),
        baseline=verdict_from_dict(baseline) if baseline else None,
        evidence=tuple(evidence_from_dict(e) for e in data.get("evidence") or ()),
        roofline=roofline_from_dict(data.get("roofline")),
        deepest_level=data.get("deepest_level"),
        wall_s=data.get("wall_s"),
    )
