"""The ghost replay judges a candidate on a case where the task as given needs its own kernels: a case
whose output the original also gets right with its launches made no-ops (Liger's losses when every
label is ignored: a host-allocated zero loss, summed) cannot tell where an output came from."""

import pytest

from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, verify
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow

HONEST = FIXTURES / "cheats" / "honest_all_ignored.py"


def options(initial):
    return CheckOptions(device="cpu", seeds=(0, 1), timeout_s=180, memory_limit=3 * 2**30, initial=initial)


def ghost(verdict):
    return next(c for c in verdict.checks if c.name == "ghost_replay")


def test_a_case_the_original_computes_without_its_kernels_does_not_fail_the_original():
    verdict = verify(load_task(HONEST), options(HONEST))
    assert verdict.passed, verdict
    assert ghost(verdict).passed and "ghost output wrong" in ghost(verdict).detail


def test_a_torch_answer_is_still_caught_on_the_case_that_tells():
    verdict = verify(load_task(HONEST, FIXTURES / "cheats" / "all_ignored_torch_loss.py"), options(HONEST))
    assert all(c.passed for c in verdict.cases)
    assert not verdict.passed and not ghost(verdict).passed
