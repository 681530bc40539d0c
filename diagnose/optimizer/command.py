"""`diagnose rewrite TASK.py [--apply ID|CODE ...] [--write] [--list]` as a plain function.

`rewrite_command(...) -> (exit code, text for stdout)`; `diagnose/cli.py` wires it and maps
`UsageError` to exit code 2.

- `--list`: every rewrite of the table, whether it applies to the file and why (or why not), and
  the findings or IR evidence that call for it.
- `--apply`: rewrite ids, finding codes (each expands to the rewrites that answer it and apply) or
  `all`; without it, every safe rewrite some finding or evidence calls for. Unsafe rewrites
  (numerics may change) run only when named.
- The result is verified on `device` (the interpreter on CPU: correctness and anti-cheat, nothing
  timed) against the original task, then written next to the input as `NAME.diagnose.py` (a free
  name `NAME.diagnose.2.py` ... when that exists, and the output says so), or over the input with
  `--write` (only when it passed). The diff is printed.

Exit codes: 0 the candidate passed verification, 1 it failed (the file is still written next to
the input for inspection, never over it), 2 bad usage.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.cache import cache_root
from diagnose.errors import EXIT_FAILED, EXIT_OK, UsageError
from diagnose.ir.cli import cached_result, run_worker, store_result
from diagnose.ir.inspect import evidence_from_dict
from diagnose.records import Evidence, Verdict
from diagnose.optimizer.diff import output_name
from diagnose.optimizer.pipeline import (
    Built,
    _search_options,
    build,
    context_for,
    Estimates,
    estimate_gains,
    make_candidate,
    survey,
    write_candidate,
)
from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.table import REWRITES
from diagnose.targets import DEFAULT_TARGET, lookup
from diagnose.task import load_task
from diagnose.task.harness import header
from diagnose.task.patch import apply_command, apply_patch, write_patch
from diagnose.toolchain.placement import require
from diagnose.verify.harness import CheckOptions, verify


def rewrite_command(
    path: str,
    apply: list[str] | None = None,
    write: bool = False,
    target: str = DEFAULT_TARGET,
    device: str = "cpu",
    list_only: bool = False,
    *,
    search_configs: bool = True,
    verify_candidate: bool = True,
    seeds: int = 3,
    baselines: tuple[str, ...] = ("eager", "compile"),
) -> tuple[int, str]:
    """Rewrite a task file (see the module docstring); returns (exit code, stdout text)."""
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: no such file")
    if file.suffix != ".py":
        raise UsageError(f"{path}: not a Python file")
    spec = lookup(target)
    require(device)
    ctx = context_for(file, None, (), spec.name)
    if _wants_ir(apply, list_only) and spec.can_compile_here:
        ctx = RewriteContext(ctx.source, ctx.path, ctx.target, ctx.findings, tuple(ir_evidence(file, spec.name)))
    if list_only:
        return EXIT_OK, render_list(ctx)
    ids = resolve(ctx, apply)
    options = _search_options(file, device, None) if search_configs else None
    built = build(ctx, ids, options)
    if not built.steps:
        why = "; ".join(f"{i}: {r}" for i, r in built.skipped) or "nothing calls for a rewrite"
        raise UsageError(f"{path}: no rewrite applied ({why})")
    found = estimate_gains(ctx, [built.source], options) if options is not None else Estimates()
    candidate = make_candidate(ctx, built, found.gains.get(0), found.repairs.get(0))
    lines = [f"rewrites: {', '.join(built.steps)} ({candidate.safety})"]
    if candidate.answers:
        lines.append(f"answers: {', '.join(candidate.answers)}")
    lines += [f"search: {s.summary()}" for s in built.searches]
    lines += [f"skipped {i}: {r}" for i, r in built.skipped]
    if candidate.repairs:
        lines.append(f"repairs: {candidate.repairs}; the rewritten kernels compile")
    if found.broken:
        lines.append(f"warning: the rewritten kernels do not compile for {spec.name} (the original does)")
    if candidate.predicted_gain is not None:
        lines.append(
            f"estimate: {candidate.predicted_gain:.2f}x over the original on {spec.name} "
            "(static estimate, not a measurement)"
        )
    # verified from the cache folder first, against the original task: the user's file is untouched so far
    code = EXIT_OK
    passed = True
    if verify_candidate:
        verdict = _verify(file, write_candidate(file, candidate), device, seeds, baselines)
        lines.append(describe(verdict))
        passed = verdict.passed
        code = EXIT_OK if passed else EXIT_FAILED
    module = header(file.read_text(encoding="utf-8"))
    if module is not None:  # a kernel module's task: a patch against the user's module
        lines.append(_hand_back(module.origin, file, candidate.source, write and passed, write))
        return code, "\n".join(lines) + "\n\n" + candidate.diff
    out_path, note = output_path(file, write and passed)
    if write and not passed:
        note = f"not written over {file.name}: it failed verification; " + (note or f"wrote {out_path}")
    out_path.write_text(candidate.source, encoding="utf-8")
    lines.append(note or f"wrote {out_path}")
    return code, "\n".join(lines) + "\n\n" + candidate.diff


def _hand_back(origin: Path, task_file: Path, new_source: str, apply: bool, asked: bool) -> str:
    """Write the patch beside the user's module (and apply it when asked and verified); one line."""
    patch = write_patch(origin, task_file.read_text(encoding="utf-8"), new_source)
    if patch is None:
        return "no change to the module"
    if apply:
        backup = apply_patch(patch)
        return f"applied {patch.path} to {origin} (+{patch.added} -{patch.removed} lines; backup {backup})"
    if asked:
        return f"not applied to {origin.name}: it failed verification; patch {patch.path}"
    return (
        f"wrote {patch.path} (+{patch.added} -{patch.removed} lines; apply with --write or "
        f"`{apply_command(patch.path, origin)}`)"
    )


def _wants_ir(apply: list[str] | None, list_only: bool) -> bool:
    if list_only:
        return True
    needs = {r.id for r in REWRITES.values() if r.needs_ir}
    return bool(apply) and any(a in needs or a.lower() == "all" for a in apply)


def ir_evidence(file: Path, target: str) -> list[Evidence]:
    """IR facts of the file's launches (the inspect worker, cached), for rewrites that read the IR."""
    payload = {
        "path": str(file.resolve()),
        "target": target,
        "passes": False,
        "diff_pass": None,
        "stage": None,
        "kernel": None,
        "cache_root": str(cache_root().resolve()),
    }
    result = cached_result(payload)
    if result is None:
        result = run_worker(payload)
        if not any("error" in k for k in result["kernels"]):
            store_result(payload, result)
    return [evidence_from_dict(e) for k in result["kernels"] for e in k.get("evidence", [])]


def resolve(ctx: RewriteContext, apply: list[str] | None) -> list[str]:
    """Rewrite ids for `--apply` entries (ids, finding codes, `all`); default: the safe ones called for."""
    surveyed = {a.rewrite.id: a for a in survey(ctx)}
    if not apply:
        return [i for i, a in surveyed.items() if a.precondition.holds and a.called_by and a.rewrite.safety == "safe"]
    ids: list[str] = []
    for entry in (e.strip() for e in apply if e.strip()):
        if entry.lower() == "all":
            ids += [i for i, a in surveyed.items() if a.precondition.holds and a.rewrite.safety == "safe"]
        elif entry in REWRITES:
            pre = surveyed[entry].precondition
            if not pre.holds:
                raise UsageError(f"{entry} does not apply to {Path(ctx.path).name}: {pre.reason}")
            ids.append(entry)
        elif any(entry.upper() in r.codes for r in REWRITES.values()):
            matching = [i for i, a in surveyed.items() if entry.upper() in a.rewrite.codes]
            holding = [i for i in matching if surveyed[i].precondition.holds]
            if not holding:
                reasons = "; ".join(f"{i}: {surveyed[i].precondition.reason}" for i in matching)
                raise UsageError(f"no rewrite for {entry.upper()} applies to {Path(ctx.path).name} ({reasons})")
            ids += holding[:1]
        else:
            raise UsageError(f"unknown rewrite or code {entry!r}; see `diagnose rewrite FILE --list`")
    return list(dict.fromkeys(ids))


def render_list(ctx: RewriteContext) -> str:
    rows = []
    for a in survey(ctx):
        mark = "applies" if a.precondition.holds else "no"
        called = f"  [called for by {', '.join(a.called_by)}]" if a.called_by else ""
        rows.append(f"{a.rewrite.id:22} {mark:8} {a.rewrite.safety:7} {a.precondition.reason}{called}")
    header = (
        f"{Path(ctx.path).name}  target {ctx.target.name}: {len(ctx.findings)} findings, {len(ctx.evidence)} IR facts"
    )
    return "\n".join([header, *rows]) + "\n"


def output_path(file: Path, write: bool) -> tuple[Path, str | None]:
    """Where the rewritten task goes, and a note when the obvious name was taken."""
    if write:
        return file, f"wrote over {file} (--write)"
    first = file.with_name(output_name(file.name))
    if not first.exists():
        return first, None
    stem = output_name(file.name)[:-3]
    n = 2
    while file.with_name(f"{stem}.{n}.py").exists():
        n += 1
    chosen = file.with_name(f"{stem}.{n}.py")
    return chosen, f"{first.name} exists (left as it is); wrote {chosen}"


def _verify(original: Path, candidate: Path, device: str, seeds: int, baselines: tuple[str, ...]) -> Verdict:
    return verify(
        load_task(original, candidate),
        CheckOptions(device=device, initial=original.resolve(), seeds=tuple(range(seeds)), baselines=baselines),
    )


def describe(verdict: Verdict) -> str:
    if verdict.failure is not None:
        return f"verification on {verdict.device}: FAILED ({verdict.failure.kind}: {verdict.failure.message})"
    bad = [c.name for c in verdict.checks if not c.passed] + [
        f"{c.group}/{c.seed}" for c in verdict.cases if not c.passed
    ]
    timed = [t for t in verdict.timings if t.variant == "candidate" and t.median_ms]
    how = (
        f"; candidate median {', '.join(f'{t.group} {t.median_ms:.3f} ms' for t in timed)}"
        if timed
        else "; not timed (no device here)"
        if verdict.device == "cpu"
        else ""
    )
    status = "passed" if verdict.passed else f"FAILED ({', '.join(bad)})"
    return (
        f"verification on {verdict.device}: {status} ({len(verdict.cases)} cases, "
        f"{sum(c.passed for c in verdict.checks)}/{len(verdict.checks)} anti-cheat checks){how}"
    )


__all__ = ["rewrite_command", "Built"]
