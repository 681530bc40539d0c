"""int32-index on real-code idioms: the rewritten module verified against the original on the
interpreter, replaying the call a project's test makes."""

from __future__ import annotations

import pytest

from tests.rewrite.conftest import verify_module_styles
from tests.rewrite.goldens import FIXTURES

FOLDER = FIXTURES / "int32-index"
# Liger's DyT without a bias: the optional pointer argument is None, and the size check must skip it.
CALLS = {"optional": "dyt(x=f32[4,300], alpha=f32[1], gamma=f32[300], beta=None)"}


@pytest.mark.slow
def test_an_optional_pointer_left_none_keeps_the_module_correct(tmp_path):
    verdict = verify_module_styles(FOLDER, CALLS, tmp_path)["optional"]
    assert verdict.failure is None, verdict.failure
    assert verdict.passed, [c for c in (*verdict.cases, *verdict.checks) if not c.passed]
