"""The soak where nothing is timed: up to `soak` calls on one case's buffers before the re-check, cut
short past its minimum once its time is spent, and the re-check says how many calls it made."""

import pytest

from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, verify
from diagnose.verify.jobs import SOAK_MIN
from tests.conftest import FIXTURES


def soak_detail(path) -> str:
    verdict = verify(load_task(path), CheckOptions(device="cpu", seeds=(0, 1), unseen_shapes=False))
    assert verdict.passed, (verdict.failure, verdict.checks)
    return next(c.detail for c in verdict.checks if c.name == "recheck_after_timing")


@pytest.mark.slow
def test_a_fast_candidate_is_soaked_for_every_call_and_a_slow_one_for_its_minimum():
    assert "soak of 20 calls" in soak_detail(FIXTURES / "cheats" / "honest.py")
    assert f"soak of {SOAK_MIN} calls" in soak_detail(FIXTURES / "tasks" / "slow_calls.py")
