"""Every golden `after.py` stays correct: verified by the harness on the CPU interpreter against its
`before.py` (correctness on fresh inputs, anti-cheat), all fixtures verified in one parallel batch."""

from __future__ import annotations

import pytest

from diagnose.rewrite.table import REWRITES
from tests.rewrite.conftest import verify_pairs
from tests.rewrite.goldens import FIXTURES


@pytest.fixture(scope="module")
def verdicts():
    ids = sorted(REWRITES)
    pairs = [(FIXTURES / i / "before.py", FIXTURES / i / "after.py") for i in ids]
    return dict(zip(ids, verify_pairs(pairs)))


@pytest.mark.slow
@pytest.mark.parametrize("rewrite_id", sorted(REWRITES))
def test_rewritten_kernel_stays_correct(verdicts, rewrite_id):
    verdict = verdicts[rewrite_id]
    assert verdict.failure is None, verdict.failure
    assert verdict.cases and all(c.passed for c in verdict.cases), [c for c in verdict.cases if not c.passed]
    assert all(c.passed for c in verdict.checks), [c for c in verdict.checks if not c.passed]
    assert verdict.passed
