"""Anti-cheat checks, decided in the parent from what the workers reported.

Each check is a function returning a `CheckResult` with a stable name; a candidate passes verification
only when every check passes. Without such layers, agents' reported speedups have come from exploits:
Sakana AI's CUDA Engineer skipped correctness checks through a memory bug in its evaluation, and 4 of 6
exploits bypassed gpu-mode/pygpubench (its PR #7). Ghost replay is KernelGenBench's (flagos-ai). The layers:

- `launches_triton`: every forward launched at least one of the candidate's own Triton kernels, except
  where the reference's outputs hold no element (an empty input correctly launches nothing).
- `ghost_replay`: with the candidate's Triton launches turned into no-ops (in a fresh process, allocator
  poisoned), its output must no longer be correct; if it still is, the answer came from somewhere else.
  A case on which the task as given is just as correct with its launches made no-ops tells nothing.
- `no_reference_call`: the candidate never constructed or called the reference `Model`.
- `input_sensitivity`: outputs change when inputs change (no caching across calls).
- `input_mutation`: inputs are left as the reference leaves them.
- `recheck_after_timing`: correctness holds again after the timing loop (or, where nothing is timed, a
  soak of repeated calls), on a fresh case.
- `side_stream`: no work escapes the timing stream (devices only): no Triton kernel still runs on
  another stream once the timed stream is done, and a device-wide sync inside the timed region costs
  little.
- `inputs_in_turn`: no job asked the vault for a file out of turn (`diagnose/verify/vault.py`): a case's
  inputs fetched before the harness fetched them, or a file that was not the job's.

The verdict is computed here, out of the candidate's reach: its process never holds a reference output,
and comparison runs in this process on tensors loaded with `weights_only=True`.
"""

from __future__ import annotations

from diagnose.records import CaseResult, CheckResult

SIDE_STREAM_RATIO = 1.5
SIDE_STREAM_MIN_MS = 0.05


def launches_triton(cases: list[dict], empty: frozenset[tuple[str, int]] = frozenset()) -> CheckResult:
    """`empty`: the (group, seed) of cases whose reference outputs hold no element: no launch needed."""
    silent = [f"{c['group']}/{c['seed']}" for c in cases if c["launches"] < 1 and (c["group"], c["seed"]) not in empty]
    if silent:
        return CheckResult("launches_triton", False, f"no Triton kernel launched in case {', '.join(silent)}")
    return CheckResult("launches_triton", True, f"{sum(c['launches'] for c in cases)} launches")


def ghost_replay(ghost_case: CaseResult | None, ghost_failure: str | None) -> CheckResult:
    if ghost_case is not None and ghost_case.passed:
        return CheckResult(
            "ghost_replay",
            False,
            "output is still correct with the Triton kernels turned into no-ops: it was not computed by Triton",
        )
    how = f"ghost run failed ({ghost_failure})" if ghost_failure else f"ghost output wrong ({ghost_case.reason})"
    return CheckResult("ghost_replay", True, how)


def ghost_uninformative(count: int) -> CheckResult:
    """Every case's output is as correct with the task as given's own launches made no-ops: the replay
    cannot tell where an output came from, and holds nothing against the candidate."""
    return CheckResult(
        "ghost_replay",
        True,
        f"not decided: on all {count} case(s) the task as given also "
        "gets the output right with its Triton launches made no-ops",
    )


def no_reference_call(reference_calls: int) -> CheckResult:
    if reference_calls:
        return CheckResult(
            "no_reference_call", False, f"the reference Model was constructed or called {reference_calls} times"
        )
    return CheckResult("no_reference_call", True)


def input_sensitivity(pairs: list[tuple[str, bool, bool]]) -> CheckResult:
    """`pairs`: (case pair label, reference outputs differ, candidate outputs differ)."""
    frozen = [label for label, ref_differs, cand_differs in pairs if ref_differs and not cand_differs]
    if frozen:
        return CheckResult(
            "input_sensitivity", False, f"identical outputs for different inputs ({', '.join(frozen)}): cached"
        )
    return CheckResult("input_sensitivity", True, f"{len(pairs)} pairs of cases compared")


def input_mutation(mutations: list[tuple[str, list[int]]]) -> CheckResult:
    """`mutations`: (case label, indices of inputs changed differently from the reference)."""
    bad = [f"input {i} in {label}" for label, indices in mutations for i in indices]
    if bad:
        return CheckResult("input_mutation", False, f"candidate changed {', '.join(bad[:4])}, the reference does not")
    return CheckResult("input_mutation", True)


def recheck_after_timing(case: CaseResult | None, phase: str) -> CheckResult:
    if case is None:
        return CheckResult("recheck_after_timing", False, f"no output after the {phase}")
    if not case.passed:
        return CheckResult("recheck_after_timing", False, f"wrong after the {phase}: {case.reason}")
    return CheckResult("recheck_after_timing", True, f"correct after the {phase}")


def recheck_in_timing(case: CaseResult | None) -> CheckResult:
    """One timed call, chosen at random after the warm-up, ran on the re-check's inputs
    (`timing_jobs.TimedRecheck`); None: the timing job had no such call (its inputs are re-checked
    fresh, not in place)."""
    if case is None:
        return CheckResult(
            "recheck_in_timing", True, "no timed call re-checked: the re-check runs on inputs of its own"
        )
    if not case.passed:
        return CheckResult("recheck_in_timing", False, f"a timed call was wrong: {case.reason}")
    return CheckResult("recheck_in_timing", True, "a timed call, chosen at random, was right")


def inputs_in_turn(refused: list[str]) -> CheckResult:
    if refused:
        return CheckResult("inputs_in_turn", False, f"inputs asked for out of turn: {', '.join(refused[:4])}")
    return CheckResult("inputs_in_turn", True)


def side_stream(ratios: dict[str, float], medians_ms: dict[str, float], escaped_calls: dict[str, int]) -> CheckResult:
    """`escaped_calls`: per group, calls that left their Triton kernels' work running on another stream
    once the timed stream was done; `ratios`: per group, how much slower the candidate reads with a
    device-wide sync inside the timed region (`diagnose.verify.timing`)."""
    for group, count in escaped_calls.items():
        if count:
            return CheckResult(
                "side_stream",
                False,
                f"group {group}: {count} call(s) left Triton kernels running on another stream after the timed "
                "stream was done: work escapes the stream",
            )
    for group, ratio in ratios.items():
        median = medians_ms.get(group, 0.0)
        if ratio > SIDE_STREAM_RATIO and (ratio - 1.0) * median > SIDE_STREAM_MIN_MS:
            return CheckResult(
                "side_stream",
                False,
                f"group {group}: {ratio:.2f}x slower with a device-wide sync inside the timed region: work escapes the stream",
            )
    return CheckResult("side_stream", True)
