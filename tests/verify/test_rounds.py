"""A round of candidates verified at once against one prepared reference (`diagnose/verify/rounds.py`),
on the interpreter: verdicts in the candidates' order, one reference job, the rest stopped when a
progress callback raises, nothing started past the deadline."""

import threading
import time

import pytest

from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions
from diagnose.verify.reference import KeptReference
from diagnose.verify.rounds import verify_round
from tests.conftest import FIXTURES

OPTIONS = CheckOptions(device="cpu", seeds=(0, 1), timeout_s=60, memory_limit=2 * 2**30)
REFERENCE = FIXTURES / "tasks/two_files/reference.py"
HONEST, WRONG = FIXTURES / "tasks/two_files/candidate.py", FIXTURES / "tasks/wrong_values.py"


class Stop(Exception):
    pass


@pytest.mark.slow
def test_a_round_judges_every_candidate_in_order_against_one_reference_job(tmp_path):
    tasks = [load_task(REFERENCE, path) for path in (HONEST, WRONG, HONEST)]
    started: list[int] = []
    at_once = threading.Barrier(2, timeout=60)  # the first two wait for each other: they run at once

    def before(index: int) -> None:
        started.append(index)
        if index < 2:
            at_once.wait()

    keep = KeptReference()
    try:
        verdicts = verify_round(tasks, OPTIONS, keep, tmp_path, parallel=2, before=before)
        assert keep.serving(tasks[0], OPTIONS) is not None, "the round's reference stays kept for the next round"
    finally:
        keep.close()
    assert [v.passed for v in verdicts] == [True, False, True]
    assert verdicts[1].failure is None and not all(c.passed for c in verdicts[1].cases)
    # The reference job ran once, before the round: every candidate was judged against the prepared one.
    assert all(dict(v.phases)["reference (prepared)"] == 0.0 for v in verdicts)
    assert sorted(started) == [0, 1, 2]


@pytest.mark.slow
def test_a_callback_that_raises_stops_the_candidates_not_yet_started(tmp_path):
    tasks = [load_task(REFERENCE, HONEST) for _ in range(3)]
    started: list[int] = []

    def before(index: int) -> None:
        started.append(index)
        if index == 0:
            raise Stop("interrupted")

    keep = KeptReference()
    try:
        with pytest.raises(Stop):
            verify_round(tasks, OPTIONS, keep, tmp_path, parallel=2, before=before)
    finally:
        keep.close()
    assert 2 not in started, "the third waited for a free worker and was not started"


def test_past_the_deadline_nothing_is_started(tmp_path):
    tasks = [load_task(REFERENCE, HONEST), load_task(REFERENCE, WRONG)]
    for parallel in (1, 2):
        keep = KeptReference()
        verdicts = verify_round(tasks, OPTIONS, keep, tmp_path, parallel=parallel, deadline=time.time() - 1)
        keep.close()
        assert verdicts == [None, None]
