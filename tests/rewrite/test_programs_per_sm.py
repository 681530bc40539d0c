"""programs-per-sm on the idioms real modules use to size a grid by the SM count: a name the host
binds (`sm_count = ...multi_processor_count`, in a device branch), a helper called where a buffer is
sized, an autotuned kernel's 2-D grid; which reads it scales together, that the edited modules stay
correct on the interpreter (the CPU stand-in answers the SM count), and that nothing is chosen
without a device."""

from __future__ import annotations

import pytest

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.conftest import fixture_module_task, verify_module_styles
from tests.rewrite.goldens import FIXTURES, context

FOLDER = FIXTURES / "programs-per-sm"
REWRITE = REWRITES["programs-per-sm"]
CALLS = {
    "module": "layer_norm_dwdb(dy=f32[40,24], x=f32[40,24], mean=f32[40], rstd=f32[40])",
    "autograd": "rms_norm_backward(dY=f32[12,40], X=f32[12,40], W=f32[40], RSTD=f32[12])",
    "autotuned": "tanh_scale_backward(dy=f32[9,50], x=f32[9,50], alpha=f32[1], gamma=f32[50])",
}


def module_task(tmp_path, style: str, call: str):
    return fixture_module_task(FOLDER, tmp_path, style, call)


def test_the_reads_it_scales_are_the_ones_the_grid_depends_on():
    """A name bound in a CUDA branch (not the XPU branch's count), a helper call inside a buffer's
    shape that the grid reads, the second axis of an autotuned kernel's grid lambda."""
    autograd = REWRITE.check(context(FOLDER, "before_autograd.py"))
    assert autograd.holds and autograd.kernels == ("_rms_bwd",)
    assert [r.attr.value for r in autograd.plan.reads] == ["multi_processor_count"]
    module = REWRITE.check(context(FOLDER, "before_module.py"))
    assert module.holds and "_num_sms(x.device)" in module.reason
    tuned = REWRITE.check(context(FOLDER, "before_autotuned.py"))
    assert tuned.holds and tuned.kernels == ("_tanh_scale_bwd",)


def test_every_read_of_the_launching_function_is_scaled_together():
    """A grid that reads the helper directly and a row count that asks it again: both scaled, or the
    programs past the first count would find no rows, and a buffer sized by it would be too short."""
    source = (
        (FOLDER / "before_module.py")
        .read_text()
        .replace(
            "    grid = (partial_dw.shape[0],)\n    rows_per_program = triton.cdiv(n_rows, grid[0])\n",
            "    grid = (min(_num_sms(x.device), n_rows),)\n"
            "    rows_per_program = triton.cdiv(n_rows, min(_num_sms(x.device), n_rows))\n",
        )
    )
    assert source.count("_num_sms(x.device)") == 3
    new = REWRITE.apply(RewriteContext(source, "ops.py", params=(("programs_per_sm", 2),)))
    assert new.count("_num_sms(x.device) * 2") == 3


def test_the_search_space_starts_from_the_current_count():
    task = context(FOLDER)
    assert REWRITE.search_space(task, REWRITE.check(task).plan) == [
        {"programs_per_sm": 1},
        {"programs_per_sm": 2},
        {"programs_per_sm": 4},
        {"programs_per_sm": 8},
    ]
    after = context(FOLDER, "after.py")
    plan = REWRITE.check(after).plan
    assert plan.factor == 4 and REWRITE.search_space(after, plan)[0] == {"programs_per_sm": 4}
    assert {"programs_per_sm": 2} in REWRITE.search_space(after, plan)


def test_a_count_scaled_before_is_rescaled_not_compounded():
    after = context(FOLDER, "after_autograd.py")
    twice = REWRITE.apply(after.with_params({"programs_per_sm": 8}))
    assert "multi_processor_count * 8\n" in twice and "* 4" not in twice
    back = REWRITE.apply(after.with_params({"programs_per_sm": 1}))
    assert back == (FOLDER / "before_autograd.py").read_text()


def test_the_launch_the_replayed_call_reaches_decides(tmp_path):
    """The backward's host function reaches the SM-sized grid; a replay of the Function's `apply` runs
    its forward, whose grid is the row count, and the rewrite says so."""
    backward = module_task(tmp_path, "autograd", CALLS["autograd"])
    pre = REWRITE.check(RewriteContext(backward.reference_path.read_text(), str(backward.reference_path)))
    assert pre.holds and pre.kernels == ("_rms_bwd",)
    forward = module_task(tmp_path, "autograd", "RMSNormFunction.apply(f32[12,40], f32[40], 1e-6)")
    pre = REWRITE.check(RewriteContext(forward.reference_path.read_text(), str(forward.reference_path)))
    assert not pre.holds and "_rms_fwd in RMSNormFunction.forward: its grid is not sized by the SM count" in pre.reason


def test_without_a_device_the_current_count_is_kept_and_the_reason_says_so(tmp_path):
    from diagnose.optimizer.pipeline import build
    from diagnose.optimizer.search import SearchOptions, search

    task = context(FOLDER)
    options = SearchOptions(str(FOLDER / "before.py"), device="cpu", cache_root=str(tmp_path))
    result = search(REWRITE, task, REWRITE.check(task).plan, options)
    assert dict(result.chosen) == {"programs_per_sm": 1} and "chosen by timing only" in result.ranked_by
    built = build(task, ["programs-per-sm"], options)
    assert built.steps == () and "timing only" in dict(built.skipped)["programs-per-sm"]
    with pytest.raises(NotApplicable):
        REWRITE.apply(task.with_params(dict(result.chosen)))


@pytest.mark.slow
def test_every_module_style_stays_correct_on_the_interpreter(tmp_path):
    """The golden rewrites of the three module styles verified against the original module on fresh
    inputs (the task file's pair is verified with every rewrite's in test_interpreter.py)."""
    verdicts = verify_module_styles(FOLDER, CALLS, tmp_path)
    for style, verdict in verdicts.items():
        assert verdict.failure is None, (style, verdict.failure)
        assert verdict.passed, (style, [c for c in (*verdict.cases, *verdict.checks) if not c.passed])


@pytest.mark.gpu
def test_on_a_device_the_search_times_the_current_count_against_its_multiples(tmp_path):
    from diagnose.optimizer.search import SearchOptions, search

    task = context(FOLDER)
    options = SearchOptions(str(FOLDER / "before.py"), device="cuda", cache_root=str(tmp_path))
    result = search(REWRITE, task, REWRITE.check(task).plan, options)
    measured = [t for t in result.trials if t.measured]
    assert measured and measured[0].values == (("programs_per_sm", 1),), (result.ranked_by, result.trials)
    assert len(measured) >= 3 and "time on cuda" in result.ranked_by
