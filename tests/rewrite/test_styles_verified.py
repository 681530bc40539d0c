"""Every real-code pair (`after_<style>.py` against `before_<style>.py`) stays correct on the interpreter:
the module copied as a user's, the call in the fixture folder's `calls.json` (`{"module": "op(x=f32[...])",
"autograd": "Fn.apply(f32[...], ...)"}`) replayed on fresh inputs, one pair per test (so that pytest-xdist
spreads them over its workers). Pairs that a rewrite's own test verifies (with its own calls) are left to it."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.rewrite.conftest import check_options
from tests.rewrite.goldens import FIXTURES, real_code_pairs

# (rewrite, style) pairs whose verification lives in the rewrite's own test module.
VERIFIED_ELSEWHERE = {
    # the originals run nowhere (the interpreter rejects a plain parameter in tl.arange too): checked
    # against PyTorch in test_constexpr_block_size.py
    ("constexpr-block-size", "module"),
    ("constexpr-block-size", "autograd"),
    ("constexpr-block-size", "autotuned"),
    # the originals run nowhere (the interpreter rejects `tl.max(x, 0.0)` too): checked against PyTorch
    # in test_elementwise_max.py
    ("elementwise-max", "module"),
    ("elementwise-max", "autograd"),
    # the originals run nowhere (the interpreter rejects `x_ptr[i]` too): checked against PyTorch in
    # test_pointer_subscript.py
    ("pointer-subscript", "module"),
    ("pointer-subscript", "autograd"),
    ("int32-index", "optional"),
    ("int32-index", "method_cast"),
    ("int32-index", "multiline_pointer"),
    ("launch-options", "module"),
    ("launch-options", "autograd"),
    ("launch-options", "kwargs"),
    ("launch-options", "alias"),
    ("prefetch-next-row", "module"),
    ("prefetch-next-row", "autograd"),
    ("programs-per-sm", "module"),
    ("programs-per-sm", "autograd"),
    ("programs-per-sm", "autotuned"),
    ("rows-per-program", "widened"),
    ("rows-per-program", "bare_tuple_grid"),
    ("rows-per-program", "library_program_id"),
    ("rows-per-program", "defaulted_params"),
}
# Pairs no call spec can reach, and why.
UNREPLAYABLE = {
    ("persistent-grid", "nested"): "the launch is in a closure `make_clamp(lo, hi)` returns; a call spec names "
    "a module attribute",
}


def _style(before) -> tuple[str, str]:
    return before.parent.name, before.stem.removeprefix("before_")


def _calls() -> dict[tuple[str, str], str]:
    out = {}
    for before, _ in real_code_pairs():
        rewrite, style = _style(before)
        path = before.parent / "calls.json"
        if path.exists() and style in (specs := json.loads(path.read_text())):
            out[rewrite, style] = specs[style]
    return out


CALLS = _calls()
PAIRS = sorted(CALLS.keys() - VERIFIED_ELSEWHERE)


def test_every_pair_is_verified_somewhere():
    """A pair with no call is verified nowhere: each one has a call here, in its rewrite's test, or a
    reason it cannot be replayed; no call names a style that has no pair."""
    pairs = {_style(before) for before, _ in real_code_pairs()}
    missing = pairs - CALLS.keys() - VERIFIED_ELSEWHERE - UNREPLAYABLE.keys()
    assert not missing, f"add their calls to the folder's calls.json: {sorted(missing)}"
    for path in FIXTURES.glob("*/calls.json"):
        for style in json.loads(path.read_text()):
            assert (path.parent.name, style) in pairs, f"{path}: no before_{style}.py"


def verified(pair, root):
    """The verdict of `after_<style>.py` against the module `before_<style>.py` copied as a user's."""
    from diagnose.task import load_task
    from diagnose.task.specs import Inputs
    from diagnose.verify.harness import verify

    rewrite, style = pair
    folder = FIXTURES / rewrite
    module = root / f"{style}_ops.py"
    shutil.copy(folder / f"before_{style}.py", module)
    task = load_task(module, folder / f"after_{style}.py", Inputs(calls=(CALLS[pair],)), root / "cache")
    return verify(task, check_options(task.reference_path))


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}/{p[1]}")
def test_real_code_pair_stays_correct(pair, tmp_path):
    verdict = verified(pair, tmp_path)
    assert verdict.failure is None, verdict.failure
    assert verdict.cases and all(c.passed for c in verdict.cases), [c for c in verdict.cases if not c.passed]
    assert all(c.passed for c in verdict.checks), [c for c in verdict.checks if not c.passed]
    assert verdict.passed
