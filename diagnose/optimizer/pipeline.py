"""The candidate pipeline: findings and evidence -> rewrites -> candidates -> verified, ranked results.

`propose(task_path, findings, evidence, target)`:
1. survey every rewrite of the table on the source: its precondition (source, and IR evidence where
   it needs it) and which findings / evidence call for it;
2. build candidates: each called-for rewrite alone, and the combination of every safe one in table
   order (a rewrite whose precondition no longer holds on the combined source, or that conflicts
   with one already applied, is skipped); tunable rewrites get their launch values from the
   launch-config search (`search.py`); libcst keeps the formatting and every result must parse;
3. compile each candidate and the original offline for the target (in parallel workers): a
   candidate that does not compile where the original does is dropped; the others get the
   estimated gain (`predicted_gain`, the static estimate: nothing is timed here). Where the original
   does not compile for the target (an LLM's first version: a chained comparison, a runtime block
   size) and a candidate does, the candidate carries the original's error as `repairs`: worth
   handing back at any estimate (`agent.policy.best_result`).
Each `Candidate` carries its unified diff, the rewrites that made it, and the findings and IR
evidence it answers (`CODE@file:line`).

`evaluate(task_path, candidates, device, target)`: every candidate is written to the cache folder
(`<cache>/rewrite/<task>-<hash>/<id>.py`, never over the user's file) and verified by the harness in
worker processes against the ORIGINAL task's reference and inputs, with the original kernel as the
initial baseline (timed only on a device). The result is sorted best first: passed before failed,
then by measured speedup over the initial kernel on a device, else by the estimate; `pareto_front`
keeps the candidates no other beats on both speed and safety.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from diagnose import scoring
from diagnose.cache import cache_root
from diagnose.errors import UsageError
from diagnose.optimizer.llm import llm_propose
from diagnose.records import Candidate, Evidence, Finding, Verdict, evidence_from_dict, finding_from_dict
from diagnose.optimizer import ranking
from diagnose.optimizer.diff import unified_diff
from diagnose.rewrite.codemods.add_autotune import MAX_CONFIGS
from diagnose.rewrite.codemods.extend_autotune import MAX_ADDED
from diagnose.rewrite.reach import reached_kernels
from diagnose.rewrite.rewrite import NotApplicable, Precondition, Rewrite, RewriteContext
from diagnose.optimizer.search import (
    ESTIMATE_TIE,
    MEASURED_TIE,
    SearchOptions,
    SearchResult,
    Trial,
    compile_batch,
    search,
)
from diagnose.rewrite.table import REWRITES
from diagnose.runtime.devices import timed
from diagnose.targets import DEFAULT_TARGET, lookup
from diagnose.task import load_task
from diagnose.task.harness import replay_targets
from diagnose.toolchain.placement import require
from diagnose.triage.cli import triage_source
from diagnose.verify.harness import CheckOptions
from diagnose.verify.reference import KeptReference
from diagnose.verify.rounds import PARALLEL, verify_round


@dataclass(frozen=True)
class Applicability:
    """One rewrite surveyed on a source: its precondition and what calls for it."""

    rewrite: Rewrite
    precondition: Precondition
    called_by: tuple[str, ...]


@dataclass(frozen=True)
class Built:
    """A source after a chain of rewrites, with what was searched and what was skipped."""

    source: str
    steps: tuple[str, ...]
    searches: tuple[SearchResult, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()


def where(path: str | None, line: int | None) -> str:
    return f"{Path(path).name}:{line}" if path and line else (Path(path).name if path else "?")


def called_by(rewrite: Rewrite, findings: Iterable[Finding], evidence: Iterable[Evidence]) -> tuple[str, ...]:
    """The findings (by code) and missed IR evidence (by name) that this rewrite answers."""
    out = [
        f"{f.code}@{where(f.location.path, f.location.line)}"
        for f in findings
        if f.code in rewrite.codes or rewrite.id in f.rewrites
    ]
    out += [
        f"{e.name}@{where(e.location.path if e.location else None, e.location.line if e.location else None)}"
        for e in evidence
        if rewrite.answers(e)
    ]
    return tuple(dict.fromkeys(out))


def survey(ctx: RewriteContext) -> list[Applicability]:
    """Every rewrite of the table, in order, with its precondition on `ctx`; on a kernel module's task,
    a rewrite of kernels the replayed call does not launch does not hold."""
    reached = reached_kernels(ctx.module, replay_targets(ctx.source))
    out = []
    for rewrite in REWRITES.values():
        pre = rewrite.check(ctx)
        if rewrite.needs_ir and not ctx.evidence and not pre.holds:
            pre = Precondition.no("needs IR evidence (compile offline first: the IR level)")
        if pre.holds and reached is not None and pre.kernels and set(pre.kernels).isdisjoint(reached):
            # verified and timed for nothing: the replayed call never launches what it changes
            pre = Precondition.no(f"changes {', '.join(pre.kernels)}, which the replayed call does not launch")
        out.append(Applicability(rewrite, pre, called_by(rewrite, ctx.findings, ctx.evidence)))
    return out


def build(ctx: RewriteContext, ids: Iterable[str], options: SearchOptions | None) -> Built:
    """Apply `ids` in table order, each on the previous result; tunables searched when `options`."""
    wanted = [i for i in REWRITES if i in set(ids)]
    source, steps, searches, skipped = ctx.source, [], [], []
    for rewrite_id in wanted:
        rewrite = REWRITES[rewrite_id]
        clash = next((s for s in steps if s in rewrite.conflicts or rewrite_id in REWRITES[s].conflicts), None)
        if clash:
            skipped.append((rewrite_id, f"conflicts with {clash}"))
            continue
        if rewrite.needs_ir and steps:
            skipped.append((rewrite_id, "its IR evidence describes the original source, not the rewritten one"))
            continue
        step_ctx = ctx.with_source(source)
        pre = rewrite.check(step_ctx)
        if not pre.holds:
            skipped.append((rewrite_id, pre.reason))
            continue
        params: dict[str, Any] = {}
        result = None
        if rewrite.tunable and options is not None:
            result = search(rewrite, step_ctx, pre.plan, options)
            searches.append(result)
            params = chosen_params(rewrite, result)
        try:
            source = rewrite.apply(step_ctx.with_params(params))
        except NotApplicable as exc:
            # a search that kept the current values says why (timed fastest, or nothing to time on)
            skipped.append((rewrite_id, f"{exc}: chose {result.ranked_by}" if result else str(exc)))
            continue
        steps.append(rewrite_id)
    return Built(source, tuple(steps), tuple(searches), tuple(skipped))


def chosen_params(rewrite: Rewrite, result: SearchResult) -> dict[str, Any]:
    """What a search result hands the rewrite: the best values, or (autotune) the ranked survivors."""
    if rewrite.id == "add-autotune":
        kept = sorted(
            (t for t in result.trials if t.pruned is None),
            key=lambda t: t.seconds if t.seconds is not None else math.inf,
        )
        return {"configs": [dict(t.values) for t in kept[:MAX_CONFIGS]]} if kept else {}
    if rewrite.id == "extend-autotune":
        return {"configs": [dict(t.values) for t in beat_the_authors(result)[:MAX_ADDED]]}
    return dict(result.chosen)


def beat_the_authors(result: SearchResult) -> list[Trial]:
    """extend-autotune's trials each compile the authors' configs and one more (an autotuned launch runs
    its fastest), its first trial the authors' alone: the configs clearly faster than that (by the
    search's tie margin), fastest first."""
    if not result.trials or result.trials[0].values or result.trials[0].seconds is None:
        return []
    base = result.trials[0]
    tie = MEASURED_TIE if base.measured else ESTIMATE_TIE
    faster = [t for t in result.trials[1:] if t.pruned is None and t.seconds is not None]
    return sorted((t for t in faster if t.seconds < base.seconds * (1 - tie)), key=lambda t: t.seconds)


def candidate_prefix(ctx: RewriteContext, steps: Iterable[str]) -> str:
    """What the id of a candidate made from `ctx`'s file by `steps` starts with (a digest of its source follows)."""
    return f"{Path(ctx.path).stem.replace('.', '_')}-{'+'.join(steps)}-"


def make_candidate(
    ctx: RewriteContext, built: Built, gain: float | None = None, repairs: str | None = None
) -> Candidate:
    digest = hashlib.sha256(built.source.encode()).hexdigest()[:8]
    rewrites = [REWRITES[s] for s in built.steps]
    answers = tuple(dict.fromkeys(a for r in rewrites for a in called_by(r, ctx.findings, ctx.evidence)))
    return Candidate(
        id=f"{candidate_prefix(ctx, built.steps)}{digest}",
        source=built.source,
        diff=unified_diff(ctx.source, built.source, ctx.path),
        made_by=built.steps,
        safety="unsafe" if any(r.safety == "unsafe" for r in rewrites) else "safe",
        answers=answers,
        predicted_gain=gain,
        searched=tuple(line for result in built.searches for line in result.table()),
        repairs=repairs,
    )


def as_findings(findings: Iterable[Finding | dict] | None, source: str, path: str, target: str) -> tuple[Finding, ...]:
    if findings is None:
        return tuple(triage_source(source, path, target))
    return tuple(f if isinstance(f, Finding) else finding_from_dict(f) for f in findings)


def as_evidence(evidence: Iterable[Evidence | dict] | None) -> tuple[Evidence, ...]:
    return tuple(e if isinstance(e, Evidence) else evidence_from_dict(e) for e in (evidence or ()))


def context_for(task_path: str | Path, findings=None, evidence=None, target: str = DEFAULT_TARGET) -> RewriteContext:
    path = Path(task_path)
    if not path.is_file():
        raise UsageError(f"{task_path}: no such file")
    source = path.read_text(encoding="utf-8")
    return RewriteContext(
        source, str(path), lookup(target), as_findings(findings, source, str(path), target), as_evidence(evidence)
    )


def declined(
    task_path: str | Path,
    findings: Iterable[Finding | dict] | None = None,
    evidence: Iterable[Evidence | dict] | None = (),
    target: str = DEFAULT_TARGET,
) -> list[tuple[str, str]]:
    """(rewrite id, why not) of each rewrite that answers one of the findings or evidence but whose
    precondition does not hold on the task: what a run that proposes nothing should say."""
    return [
        (a.rewrite.id, a.precondition.reason)
        for a in survey(context_for(task_path, findings, evidence, target))
        if a.called_by and not a.precondition.holds
    ]


@dataclass(frozen=True)
class Dropped:
    """A candidate built and then dropped before verification: it does not compile for the target where
    the original does (the int32 twin of Liger's DyT called its size check on a None pointer while
    its host code ran for the offline compile). A run that proposes nothing says so, and why."""

    made_by: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Kept:
    """A tunable rewrite whose launch-configuration search kept the values the source has (they timed
    fastest, or there was no device to time on): no candidate, and the search's summary says why. A run
    that proposes nothing says so, rather than reading as if nothing applied (TritonBench-G's
    cosine_compute: launch-options searched, and the report said only "no rewrite was proposed")."""

    rewrite: str
    summary: str


@dataclass(frozen=True)
class Proposal:
    candidates: list[Candidate]
    dropped: tuple[Dropped, ...] = ()
    kept: tuple[Kept, ...] = ()


def propose(
    task_path: str | Path,
    findings: Iterable[Finding | dict] | None = None,
    evidence: Iterable[Evidence | dict] | None = (),
    target: str = DEFAULT_TARGET,
    **options,
) -> list[Candidate]:
    """Candidates for the task at `task_path` that answer `findings` / `evidence`: `proposal(...)`'s."""
    return proposal(task_path, findings, evidence, target, **options).candidates


def proposal(
    task_path: str | Path,
    findings: Iterable[Finding | dict] | None = None,
    evidence: Iterable[Evidence | dict] | None = (),
    target: str = DEFAULT_TARGET,
    *,
    search_configs: bool = True,
    estimate: bool = True,
    device: str = "cpu",
    workers: int | None = None,
    llm: Any = None,
    ledger: Any = None,
    device_lock: str | None = None,
    tried: Iterable[str] = (),
) -> Proposal:
    """Candidates for the task at `task_path` that answer `findings` / `evidence` (see the module
    docstring), and those dropped before verification with why.

    `findings=None` triages the source here; dicts (`Finding.to_dict()`) are accepted, as the agent
    keeps them. `llm` (an `LLMConfig`) adds the LLM proposer's candidates (their token counts go to
    `ledger`, an `llm.TokenLedger`). `tried` holds the ids of candidates already proposed: a chain of
    rewrites that made one of them from this same file is not built, searched or estimated again.
    """
    ctx = context_for(task_path, findings, evidence, target)
    options = _search_options(task_path, device, workers, device_lock) if search_configs else None
    chosen = [a for a in survey(ctx) if a.precondition.holds and a.called_by]
    chains: list[list[str]] = []
    safe = [a.rewrite.id for a in chosen if a.rewrite.safety == "safe"]
    if len(safe) > 1:
        chains.append(safe)
    chains += [[a.rewrite.id] for a in chosen]
    made = tuple(tried)
    chains = [ids for ids in chains if not any(t.startswith(candidate_prefix(ctx, ids)) for t in made)]
    built_all, seen, kept = [], set(), {}
    for ids in chains:
        built = build(ctx, ids, options)
        kept.update({r.rewrite: r.summary() for r in built.searches if r.rewrite not in built.steps})
        if built.steps and built.source not in seen:
            seen.add(built.source)
            built_all.append(built)
    found = estimate_gains(ctx, [b.source for b in built_all], options) if estimate and built_all else Estimates()
    # a candidate that does not compile for the target (where the original does) is not worth verifying
    candidates = [
        make_candidate(ctx, b, found.gains.get(i), found.repairs.get(i))
        for i, b in enumerate(built_all)
        if i not in found.broken
    ]
    dropped = tuple(
        Dropped(built_all[i].steps, f"does not compile for {ctx.target.name}: {why}")
        for i, why in sorted(found.broken.items())
    )
    if llm is not None:
        suggested = llm_propose(task_path, ctx.findings, ctx.evidence, target, llm)
        if ledger is not None:
            ledger.add(suggested)
        candidates += list(suggested.candidates)
    return Proposal(candidates, dropped, tuple(Kept(k, v) for k, v in kept.items()))


def _search_options(
    task_path: str | Path, device: str, workers: int | None, device_lock: str | None = None
) -> SearchOptions:
    return SearchOptions(
        str(Path(task_path).resolve()),
        device=device,
        workers=workers,
        cache_root=str(cache_root().resolve()),
        device_lock=device_lock,
    )


@dataclass(frozen=True)
class Estimates:
    """What compiling the candidates beside the original for the target says, by candidate index: the
    estimated speedup (static estimate); the first compile error of a candidate that breaks where the
    original compiles; and, where the original does not compile, the original's error for each
    candidate that does (a repair: on the target the task as given cannot run at all)."""

    gains: dict[int, float] = field(default_factory=dict)
    broken: dict[int, str] = field(default_factory=dict)
    repairs: dict[int, str] = field(default_factory=dict)


def estimate_gains(ctx: RewriteContext, sources: list[str], options: SearchOptions | None) -> Estimates:
    """`Estimates` of each source against the original, compiled for the target in workers."""
    if not ctx.target.can_compile_here or options is None:
        return Estimates()
    with tempfile.TemporaryDirectory(prefix="diagnose-estimate-") as folder:
        stem = Path(ctx.path).stem.replace(".", "_")
        paths = [str(Path(folder, f"{stem}_c{i:02d}.py")) for i in range(len(sources))]
        base = str(Path(folder, f"{stem}_original.py"))
        Path(base).write_text(ctx.source)
        for path, text in zip(paths, sources):
            Path(path).write_text(text)
        results = compile_batch(options.task_path, [base, *paths], ctx.target, options.workers, options.cache_root)
    if base not in results:
        return Estimates()
    original = ranking.view(results[base], ctx.target)
    gains, broken, repairs = {}, {}, {}
    for i, path in enumerate(paths):
        if path not in results:
            continue
        mine = ranking.view(results[path], ctx.target)
        if original.compiled and mine.errors:
            broken[i] = first_line(mine.errors[0])
            continue
        if original.errors and mine.compiled:
            repairs[i] = f"the task as given does not compile for {ctx.target.name}: {first_line(original.errors[0])}"
        value = ranking.gain(original, mine)
        if value is not None:
            gains[i] = round(value, 3)
    return Estimates(gains, broken, repairs)


def first_line(error: str) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else "no message"


# ---------------------------------------------------------------- evaluation


def candidate_folder(task_path: str | Path) -> Path:
    """Where a task's candidates are written: the cache, never beside (or over) the user's file."""
    path = Path(task_path).resolve()
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    folder = cache_root() / "rewrite" / f"{path.stem}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_candidate(task_path: str | Path, candidate: Candidate) -> Path:
    path = candidate_folder(task_path) / f"{candidate.id}.py"
    path.write_text(candidate.source, encoding="utf-8")
    return path


def evaluate(
    task_path: str | Path,
    candidates: Iterable[Candidate],
    device: str = "cpu",
    target: str = DEFAULT_TARGET,
    *,
    check: Any = None,
    parallel: int | None = None,
) -> list[tuple[Candidate, Verdict]]:
    """Verify every candidate against the original task (correctness and anti-cheat, in workers), time
    them on a device, and return them best first (see `rank`)."""
    require(device)
    lookup(target)
    task_path = Path(task_path).resolve()
    options = check or CheckOptions(device=device, initial=task_path)
    candidates = list(candidates)
    paths = [write_candidate(task_path, c) for c in candidates]

    if not paths:
        return []
    # One reference job for all of them: every candidate is judged against the same cases.
    keep = KeptReference()
    try:
        tasks = [load_task(task_path, p) for p in paths]
        verdicts = verify_round(
            tasks,
            options,
            keep,
            candidate_folder(task_path),
            parallel=parallel or (PARALLEL if timed(device) else os.cpu_count() or 1),
        )
    finally:
        keep.close()
    return rank(list(zip(candidates, verdicts)))


def score(candidate: Candidate, verdict: Verdict) -> tuple[float, str]:
    """`diagnose.scoring.candidate_score`: the one score, as the report shows it."""
    return scoring.candidate_score(candidate, verdict)


def rank(results: list[tuple[Candidate, Verdict]]) -> list[tuple[Candidate, Verdict]]:
    """Passed first, then faster (measured, else estimated), then safe before unsafe."""
    return sorted(results, key=lambda r: (not r[1].passed, -score(*r)[0], r[0].safety != "safe"))


def pareto_front(results: list[tuple[Candidate, Verdict]]) -> list[tuple[Candidate, Verdict]]:
    """Passed candidates that no other passed candidate beats on speed and safety at once."""
    passed = [r for r in results if r[1].passed]

    def dominates(a, b) -> bool:
        sa, sb = score(*a)[0], score(*b)[0]
        safe_a, safe_b = a[0].safety == "safe", b[0].safety == "safe"
        return sa >= sb and safe_a >= safe_b and (sa > sb or safe_a > safe_b)

    return [r for r in passed if not any(dominates(o, r) for o in passed if o is not r)]
