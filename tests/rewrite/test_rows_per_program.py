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
    verdict = verify_module_styles(FOLDER, {"widened": "geglu_forward(a=f32[10,40], b=f32[10,40])"}, tmp_path)[
        "widened"
    ]
    assert verdict.failure is None, verdict.failure
    assert verdict.passed, [c for c in (*verdict.cases, *verdict.checks) if not c.passed]


def test_a_grid_written_as_a_bare_subscript_tuple_is_a_one_row_grid():
    """FlagGems writes 1-D grids as `kernel[M,](...)`: Python's tuple `(M,)`, one program per row."""
    path = FOLDER / "before_bare_tuple_grid.py"
    ctx = RewriteContext(path.read_text(), str(path))
    pre = REWRITE.check(ctx)
    assert pre.holds and pre.kernels == ("row_sumsq_kernel",), pre.reason
    new = REWRITE.apply(ctx)
    assert "row_sumsq_kernel[(triton.cdiv(M, " in new and "row_sumsq_kernel[M,]" not in new


@pytest.mark.slow
def test_a_bare_subscript_tuple_grid_kernel_stays_correct(tmp_path):
    verdict = verify_module_styles(FOLDER, {"bare_tuple_grid": "row_sumsq(x=f32[10,40])"}, tmp_path)["bare_tuple_grid"]
    assert verdict.failure is None, verdict.failure
    assert verdict.passed, [c for c in (*verdict.cases, *verdict.checks) if not c.passed]


def test_a_row_bound_through_the_librarys_own_program_id_helper_keeps_the_helper():
    """FlagGems binds its rows with `pid = tle.program_id(0)` (its helper widens to int64): the new binding
    calls the same helper; a kernel that multiplies such a row by a block size is a tile kernel, declined."""
    path = FOLDER / "before_library_program_id.py"
    ctx = RewriteContext(path.read_text(), str(path))
    assert REWRITE.check(ctx).holds
    assert "pid = tle.program_id(0) * ROWS + r" in REWRITE.apply(ctx)
    tile = path.read_text().replace("in_ptr + pid * N + cols", "in_ptr + pid * BLOCK_SIZE + cols")
    pre = REWRITE.check(RewriteContext(tile, str(path)))
    assert not pre.holds and "multiplied by a block size" in pre.reason


@pytest.mark.slow
def test_a_library_program_id_kernel_stays_correct(tmp_path):
    verdict = verify_module_styles(FOLDER, {"library_program_id": "row_max(x=f32[10,40])"}, tmp_path)[
        "library_program_id"
    ]
    assert verdict.failure is None, verdict.failure
    assert verdict.passed, [c for c in (*verdict.cases, *verdict.checks) if not c.passed]


@pytest.mark.slow
def test_a_kernel_with_defaulted_parameters_stays_correct(tmp_path):
    """Liger's KL-div kernels give their constexpr options defaults: the appended parameters get one too."""
    verdict = verify_module_styles(
        FOLDER, {"defaulted_params": "kldiv_rows(y_pred=f32[10,40], y_true=f32[10,40](range=(0.01, 1.0)))"}, tmp_path
    )["defaulted_params"]
    assert verdict.failure is None, verdict.failure
    assert verdict.passed, [c for c in (*verdict.cases, *verdict.checks) if not c.passed]


def test_one_program_per_token_and_head_takes_rows_on_the_first_axis_and_keeps_the_rest():
    """vLLM's idiom: a (tokens, heads) grid, `tl.num_programs(1)` read for the head count, and tokens past
    the prefix skipped with an early `return`, which becomes a guard around the rest of the row."""
    path = FOLDER / "before_token_heads.py"
    ctx = RewriteContext(path.read_text(), str(path))
    pre = REWRITE.check(ctx)
    assert pre.holds and pre.kernels == ("merge_parts_kernel",), pre.reason
    new = REWRITE.apply(ctx)
    assert "merge_parts_kernel[(triton.cdiv(tokens, 4), heads)]" in new
    assert "return" not in new.split("def merge_parts_kernel", 1)[1].split("\ndef ", 1)[0]
    assert "if not (token >= n_prefix):" in new


def test_a_returning_branch_that_rebinds_an_earlier_name_is_declined():
    # Triton merges a name rebound in an `if` with its value before it, and refuses a change of type there;
    # under `return` the branch never merged, so the guard form could fail to compile where the kernel did not.
    path = FOLDER / "before_token_heads.py"
    source = path.read_text().replace(
        "        b = tl.load(part_b + base + offs, mask=mask)\n",
        "        mask = mask & (offs < 8)\n        b = tl.load(part_b + base + offs, mask=mask)\n",
    )
    pre = REWRITE.check(RewriteContext(source, str(path)))
    assert not pre.holds and "rebinds mask, bound before it" in pre.reason, pre.reason


@pytest.mark.slow
def test_the_token_and_head_rewrite_compiles_for_a_gpu(tmp_path, cli):
    """The interpreter runs Python's `if`; the compiler merges what both branches bind. Compiled offline for
    sm_90 at the fixture's call, the rewritten kernel must lower."""
    import json
    import shutil

    shutil.copy(FOLDER / "after_token_heads.py", tmp_path / "merge_parts.py")
    call = json.loads((FOLDER / "calls.json").read_text())["token_heads"]
    done = cli(
        "inspect",
        str(tmp_path / "merge_parts.py"),
        "--call",
        call,
        "--json",
        env={"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)
