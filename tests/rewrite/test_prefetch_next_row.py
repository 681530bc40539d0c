"""prefetch-next-row on the row loops real kernels write: index addressing through row pointers the
body computes (inlined), pointers bumped at the end of each iteration (advanced by their stride), a
grid stride, loads cast on the way in; the edited modules stay correct on the interpreter."""

from __future__ import annotations

import pytest

from diagnose.records import Evidence
from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.conftest import verify_module_styles
from tests.rewrite.goldens import FIXTURES, context

FOLDER = FIXTURES / "prefetch-next-row"
REWRITE = REWRITES["prefetch-next-row"]
CALLS = {
    "module": "layer_norm_backward(dy=f32[37,50], x=f32[37,50], w=f32[50], mean=f32[37], rstd=f32[37])",
    "autograd": "rms_norm_backward(dY=f32[45,40], X=f32[45,40], W=f32[40], RSTD=f32[45])",
}


def test_the_loads_that_move_and_how_their_next_address_is_written():
    module = REWRITE.check(context(FOLDER, "before_module.py"))
    assert module.holds and [load.target for load in module.plan.loads] == ["x", "dy", "mean", "rstd"]
    inlined = (FOLDER / "after_module.py").read_text()
    assert "x_next = tl.load(X + row_next * stride + cols, mask=mask & (row_next < row_end)" in inlined
    assert "        row_x = X + row * stride\n" not in inlined  # the row pointer only the moved load read is gone
    bumped = REWRITE.check(context(FOLDER, "before_autograd.py"))
    assert bumped.holds and bumped.kernels == ("_rms_bwd",)  # the forward has no loop
    assert dict(bumped.plan.bumps).keys() == {"dY", "dX", "X"}
    after = (FOLDER / "after_autograd.py").read_text()
    assert "x_next = tl.load(X + stride + cols, mask=mask & (row_next < row_end), other=0.0)" in after


def test_a_load_after_its_pointer_moved_or_of_a_computed_address_stays():
    source = (FOLDER / "before_autograd.py").read_text()
    early = source.replace("        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)\n", "").replace(
        "        X += stride\n",
        "        X += stride\n        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)\n",
    )
    pre = REWRITE.check(RewriteContext(early, "ops.py"))
    assert pre.holds and "x" not in [load.target for load in pre.plan.loads]
    moving_end = (
        (FOLDER / "before_module.py")
        .read_text()
        .replace("        db += dy\n", "        db += dy\n        row_end = row_end - 0\n")
    )
    assert "end or step reads a name the body assigns" in REWRITE.check(RewriteContext(moving_end, "ops.py")).reason
    gather = REWRITE.check(context(FOLDER, "rejected_gather.py"))
    assert not gather.holds and "scalars" in gather.reason


def test_a_mask_passed_by_position_gets_the_row_bound_where_it_is():
    """FlagGems writes `tl.load(ptr, mask, other)`: a second `mask=` would not compile."""
    source = (
        (FOLDER / "before_module.py")
        .read_text()
        .replace("tl.load(row_x + cols, mask=mask, other=0.0)", "tl.load(row_x + cols, mask, 0.0)")
    )
    new = REWRITE.apply(RewriteContext(source, "ops.py"))
    assert "x_next = tl.load(X + row_next * stride + cols, mask & (row_next < row_end), 0.0)" in new


def test_a_loop_from_zero_whose_variable_is_cast_gets_a_first_row_that_parses():
    """flash-linear-attention writes `for i_t in range(NT): o_t = i_t.to(tl.int64) * BT + ...`: the first
    row's load has the variable replaced by 0, and `0.to(tl.int64)` is not Python."""
    source = (
        (FOLDER / "before_module.py")
        .read_text()
        .replace("for row in range(row_start, row_end):", "for row in range(0, row_end):")
        .replace("row_x = X + row * stride", "row_x = X + row.to(tl.int64) * stride")
    )
    new = REWRITE.apply(RewriteContext(source, "ops.py"))
    compile(new, "ops.py", "exec")
    assert "X + (0).to(tl.int64) * stride + cols" in new


def test_it_answers_a_loop_the_compiler_did_not_pipeline():
    missed = Evidence("ir", "ttgir", "SoftwarePipelining", "analysis", None, (("pipelined", False),))
    done = Evidence("ir", "ttgir", "SoftwarePipelining", "passed", None, (("pipelined", True),))
    assert REWRITE.answers(missed) and not REWRITE.answers(done)


@pytest.mark.slow
def test_every_module_style_stays_correct_on_the_interpreter(tmp_path):
    """Rows past the last are masked off (grid strides, a block of rows per program, rows that do not
    divide among the programs); verified against the original module on fresh inputs."""
    verdicts = verify_module_styles(FOLDER, CALLS, tmp_path)
    for style, verdict in verdicts.items():
        assert verdict.failure is None, (style, verdict.failure)
        assert verdict.passed, (style, [c for c in (*verdict.cases, *verdict.checks) if not c.passed])
