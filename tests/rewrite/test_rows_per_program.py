"""rows-per-program on Liger-Kernel's row idiom: the row widened to int64 where it is bound
(`program_id = tl.program_id(0).to(tl.int64)`, `tl.cast(tl.program_id(0), tl.int64)`), and of a
module's forward and backward kernels the one the task's call launches."""

from __future__ import annotations

import pytest

from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.conftest import verify_module_styles
from tests.rewrite.goldens import FIXTURES

FOLDER = FIXTURES / "rows-per-program"
REWRITE = REWRITES["rows-per-program"]


def module_task(tmp_path, call: str):
    """The task of `forward_backward_widened.py` (a forward and a backward kernel) replaying `call`."""
    import shutil

    from diagnose.task import load_task
    from diagnose.task.specs import Inputs

    module = tmp_path / "geglu_ops.py"
    shutil.copy(FOLDER / "forward_backward_widened.py", module)
    return load_task(module, inputs=Inputs(calls=(call,)), cache=tmp_path / "cache")


def test_the_kernel_the_replayed_call_launches_is_the_one_changed(tmp_path):
    task = module_task(tmp_path, "geglu_backward(a=f32[6,40], b=f32[6,40], dc=f32[6,40])")
    ctx = RewriteContext(task.reference_path.read_text(), str(task.reference_path))
    pre = REWRITE.check(ctx)
    assert pre.holds and pre.kernels == ("_geglu_backward_kernel",), pre.reason
    kernel = REWRITE.apply(ctx).split("def _geglu_backward_kernel", 1)[1].split("\ndef ", 1)[0]
    assert "program_id = (tl.program_id(0) * ROWS + r).to(tl.int64)" in kernel


@pytest.mark.slow
def test_a_widened_row_kernel_stays_correct(tmp_path):
    verdict = verify_module_styles(FOLDER, {"widened": "geglu_forward(a=f32[10,40], b=f32[10,40])"}, tmp_path)["widened"]
    assert verdict.failure is None, verdict.failure
    assert verdict.passed, [c for c in (*verdict.cases, *verdict.checks) if not c.passed]
