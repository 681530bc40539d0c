"""The candidates of one subgraph, each verified on its own against the subgraph's task.

- `torch`: the subgraph as it is (its task's `Model`). It is the reference itself, so it is never run
  through the harness (it launches no Triton kernel, which the harness requires of a candidate).
- `triton`: `DIR/<subgraph name>.py` from `--kernels DIR`, defining `ModelNew` with the subgraph
  `Model`'s constructor (no arguments) and forward, verified with the harness as `diagnose check`
  verifies a candidate file. On a device its time and the torch ops' (the harness's `eager` baseline)
  come from the same timing run.
- `inductor`: `<name>.inductor.py`, the Triton kernels Inductor generates for the subgraph as a
  standalone `ModelNew` (`inductor.py`), verified and timed the same way; `unavailable`, with the
  reason, where Inductor gives none (a lone matmul is `extern_kernels.mm`, no Triton kernel).

A candidate file that does not load (a syntax error, no `ModelNew`) is `failed` with the loader's one line:
the other candidates and subgraphs go on.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.decompose.choose import Candidate
from diagnose.decompose.inductor import Extraction
from diagnose.errors import DiagnoseError
from diagnose.records import Verdict
from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, verify

REFERENCE_NOTE = "the subgraph as it is: the reference itself, nothing to verify"


def kernel_for(name: str, kernels: Path | None) -> Path | None:
    """The user's Triton implementation of subgraph `name`, when `kernels` has one."""
    if kernels is None:
        return None
    path = kernels / f"{name}.py"
    return path.resolve() if path.is_file() else None


def candidates(
    task_file: Path, kernel: Path | None, options: CheckOptions, inductor: Extraction | None = None
) -> tuple[Candidate, ...]:
    """The torch candidate, then the user's Triton one (when there is a kernel) and Inductor's (when
    extraction ran), each verified (and on a device timed) against the subgraph's task."""
    tried, eager = [], None
    for name, path in (("triton", kernel), ("inductor", inductor.path if inductor else None)):
        if path is None:
            continue
        try:
            task = load_task(task_file, candidate=path)
        except DiagnoseError as exc:  # a candidate file that does not load is that candidate's failure only
            tried.append(Candidate(name, str(path), "failed", None, f"not loaded: {str(exc).splitlines()[0]}"[:200]))
            continue
        verdict = verify(task, options)
        eager = eager if eager is not None else median(verdict, "eager")
        tried.append(
            Candidate(
                name, str(path), "passed" if verdict.passed else "failed", median(verdict, "candidate"), why(verdict)
            )
        )
    if inductor is not None and inductor.path is None:
        tried.append(Candidate("inductor", "", "unavailable", note=inductor.reason))
    return (Candidate("torch", str(task_file), "reference", eager, REFERENCE_NOTE), *tried)


def median(verdict: Verdict, variant: str) -> float | None:
    """The variant's median time on the first timed group, None when not timed."""
    return next((t.median_ms for t in verdict.timings if t.variant == variant and t.median_ms), None)


def why(verdict: Verdict) -> str:
    """The verdict in a few words: what failed first, or that it passed."""
    if verdict.failure is not None:
        first = (verdict.failure.message.strip().splitlines() or [""])[0]
        return f"{verdict.failure.kind}: {first}"[:200]
    wrong = [c for c in verdict.cases if not c.passed]
    if wrong:
        case = wrong[0]
        error = f", max abs error {case.max_abs_err:.3g}" if case.max_abs_err is not None else ""
        return f"wrong output on {len(wrong)} of {len(verdict.cases)} cases{error}"
    failed = [c for c in verdict.checks if not c.passed]
    if failed:
        return f"{failed[0].name}: {failed[0].detail}"[:200]
    return f"passed {len(verdict.cases)} cases and {len(verdict.checks)} anti-cheat checks"
