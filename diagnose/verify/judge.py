"""The parent's side of a verification: reading what the workers wrote and deciding on it.

Reference outputs are read into the parent and their files deleted before any candidate job starts
(`take_references`); a candidate's outputs are deleted as soon as they are read (`take`). A candidate
runs as the same user and could read any file left on disk — the reference's outputs, or the outputs
of an earlier candidate that passed — so what it is judged against lives only in this process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from diagnose.records import CaseResult
from diagnose.verify import recipes, tensors
from diagnose.verify.compare import compare_case, compare_one
from diagnose.verify.oracle import Oracle


@dataclass(frozen=True)
class HeldCase:
    """What one case is judged against: the reference outputs, the inputs as the reference left them
    (None when it changed none), and per output its float64 oracle where the reference is off one
    (`diagnose/verify/oracle.py`; empty where no output has one)."""

    outputs: list
    post_inputs: list | None = None
    oracles: tuple[Oracle | None, ...] = ()


Held = dict[tuple[str, int, str], HeldCase]
# Elements of each output compared first when telling two seeds' outputs apart.
HEAD = 1 << 15


def key(case: dict) -> tuple[str, int, str]:
    return case["group"], case["seed"], case["role"]


def take(path: str | Path):
    """Read a worker's file and delete it."""
    value = tensors.load(path)
    Path(path).unlink(missing_ok=True)
    return value


def take_references(cases: list[dict]) -> Held:
    """The reference outputs of every case, read here, their files deleted; the cases lose their paths
    to those files, so no payload sent to a candidate names them either."""
    held: Held = {}
    for case in cases:
        outputs_file, post_file = case.pop("reference"), case.pop("reference_post_inputs", None)
        oracle_file = case.pop("oracle", None)
        case.pop("oracle_off", None)
        oracles = tuple(Oracle(**o) if o is not None else None for o in take(oracle_file)) if oracle_file else ()
        held[key(case)] = HeldCase(take(outputs_file), take(post_file) if post_file else None, oracles)
    return held


def compare_held(
    case: dict, held: Held, outputs_file: str, tolerances: dict, unwritten: bool = False, early: bool = False
) -> CaseResult:
    """A worker's outputs for `case` against the reference's (`compare.compare_case`, `unwritten` and
    `early` there)."""
    one = held[key(case)]
    return compare_case(
        case["group"], case["seed"], one.outputs, take(outputs_file), tolerances, unwritten, one.oracles, early
    )


def differs(a: list, b: list) -> bool:
    import torch  # deferred: torch is heavy

    return len(a) != len(b) or any(x.shape != y.shape or not torch.equal(x, y) for x, y in zip(a, b))


def differs_beyond_tolerance(a: list, b: list, tolerances: dict) -> bool:
    """Two seeds' reference outputs are different results, not the same one computed in another order
    (a reduction with atomics, or a plan that reorders its groups, varies in its last bits from run to
    run: an exact comparison would call a candidate that is deterministic "cached")."""
    if len(a) != len(b):
        return True
    if not a:
        return False
    # Two seeds' outputs differ in their first elements already, almost always: that settles it without
    # a pass over GiB of outputs; only outputs alike there are compared whole.
    if not compare_case("", 0, [head(x) for x in a], [head(y) for y in b], tolerances).passed:
        return True
    return not compare_case("", 0, a, b, tolerances).passed


def head(output):
    """The first `HEAD` elements of a tensor output, flattened; anything else as it is."""
    return output.reshape(-1)[:HEAD] if hasattr(output, "reshape") and hasattr(output, "shape") else output


def mutated_differently(
    case: dict, result: dict, reference_post: list | None, inputs_of: Callable[[str], list]
) -> list[int]:
    """Inputs the candidate left differently from how the reference leaves them.

    An input the reference leaves alone must stay bit for bit as it was (a change in its lowest bits is a
    watermark a cache can key on, and within any tolerance); one the reference changes must end within
    tolerance of the reference's result. The candidate job saves its post-call inputs only when it
    changed one; when neither side changed anything there is nothing to load.
    """
    if result.get("post_inputs") is None:
        return list(case["mutated"])
    held = inputs_of(case["inputs"])  # the inputs, or their recipe and digests (`diagnose.verify.recipes`)
    actual = take(result["post_inputs"])
    by_reference = set(case["mutated"])
    untouched = set(recipes.differing(held, actual)) - by_reference
    expected = reference_post if reference_post is not None else held
    changed = {i for i in by_reference if hasattr(expected[i], "shape") and not compare_one(expected[i], actual[i])[0]}
    return sorted(untouched | changed)


@dataclass(frozen=True)
class Judged:
    """The parent's reading of the candidate's check cases."""

    cases: tuple[CaseResult, ...]
    # (label, reference outputs differ between the seeds, candidate outputs differ)
    sensitivity: tuple[tuple[str, bool, bool], ...]
    mutations: tuple[tuple[str, list[int]], ...]


def judge(
    cases: list[dict], results: list[dict], held: Held, tolerances: dict, inputs_of: Callable[[str], list]
) -> Judged:
    """Compare every case, pair consecutive seeds of a group and check input mutation (`inputs_of(name)`:
    a case's inputs, from the vault).

    Each output file is read once and at most two of them are kept at a time: outputs of the large
    groups are GiB-sized.
    """
    case_results, pairs, mutations = [], [], []
    previous = None
    for case, result in zip(cases, results):
        one, outs = held[key(case)], take(result["outputs"])
        refs = one.outputs
        case_results.append(compare_case(case["group"], case["seed"], refs, outs, tolerances, oracles=one.oracles))
        if previous is not None and previous[0]["group"] == case["group"]:
            label = f"{case['group']} seeds {previous[0]['seed']}/{case['seed']}"
            pairs.append((label, differs_beyond_tolerance(previous[1], refs, tolerances), differs(previous[2], outs)))
        mutations.append(
            (f"{case['group']}/{case['seed']}", mutated_differently(case, result, one.post_inputs, inputs_of))
        )
        previous = (case, refs, outs)
    return Judged(tuple(case_results), tuple(pairs), tuple(mutations))
