"""launch-options on the idioms real modules use: which launch it picks (the one the task's call
reaches), where it edits (a literal, a default, a settings helper's value, a `kernel_args` dict), that
the edited modules stay correct on the interpreter, and that nothing is chosen without a device."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.conftest import fixture_module_task, SEEDS, SOAK
from tests.rewrite.goldens import FIXTURES, context

FOLDER = FIXTURES / "launch-options"
REWRITE = REWRITES["launch-options"]
# One call per real-code style, as `--call` would give it.
CALLS = {
    "module": "rotate_half_(q=f32[6,3,16], cos=f32[6,8], sin=f32[6,8])",
    "autograd": "rms_norm_backward(dY=f32[10,100], X=f32[10,100], W=f32[100], RSTD=f32[10])",
    "kwargs": "layer_norm_forward(X=f32[7,50], W=f32[50], B=f32[50], eps=1e-5)",
    "alias": "RMSNorm.apply(X=f32[2,5,100], W=f32[100], eps=1e-6, offset=False)",
}


def module_task(tmp_path, style: str, call: str):
    return fixture_module_task(FOLDER, tmp_path, style, call)


def test_the_launch_the_replayed_call_reaches_is_the_one_changed(tmp_path):
    """A module with a forward and a backward kernel: the backward's launch for a replay of
    `rms_norm_backward`, the forward's for `RMSNormFunction.apply` (its `forward`)."""
    backward = module_task(tmp_path, "autograd", CALLS["autograd"])
    ctx = RewriteContext(backward.reference_path.read_text(), str(backward.reference_path))
    assert REWRITE.check(ctx).kernels == ("_rms_norm_bwd",)
    forward = module_task(tmp_path, "autograd", "RMSNormFunction.apply(f32[10,100], f32[100], 1e-6)")
    ctx = RewriteContext(forward.reference_path.read_text(), str(forward.reference_path))
    pre = REWRITE.check(ctx)
    assert pre.kernels == ("_rms_norm_fwd",) and "RMSNormFunction.forward" in pre.reason


def test_the_search_space_starts_from_the_current_values():
    """Literal or default options are searched as values, a helper's result as a factor on it; a
    kernel without a loop has no stages to search."""
    task = context(FOLDER)
    space = REWRITE.search_space(task, REWRITE.check(task).plan)
    assert space[0] == {"num_warps": 4, "num_stages": 3}
    assert {"num_warps": 8, "num_stages": 3} in space and {"num_warps": 4, "num_stages": 1} in space
    helper = context(FOLDER, "before_autograd.py")
    assert REWRITE.search_space(helper, REWRITE.check(helper).plan)[:3] == [
        {"num_warps_scale": 1, "num_stages": 3},
        {"num_warps_scale": 2, "num_stages": 3},
        {"num_warps_scale": -2, "num_stages": 3},
    ]
    plain = context(FOLDER, "before_module.py")
    assert all("num_stages" not in v for v in REWRITE.search_space(plain, REWRITE.check(plain).plan))


def test_a_scaled_helper_value_is_rescaled_not_compounded():
    after = context(FOLDER, "after_autograd.py")
    plan = REWRITE.check(after).plan
    assert plan.warps.factor == 2 and plan.warps.expression == "num_warps"
    halved = REWRITE.apply(after.with_params({"num_warps_scale": -2, "num_stages": 2}))
    assert "num_warps=max(num_warps // 2, 1)," in halved and "min(" not in halved.split("num_warps=max")[1][:30]
    back = REWRITE.apply(after.with_params({"num_warps_scale": 1, "num_stages": 2}))
    assert "        num_warps=num_warps,\n" in back


def test_without_a_device_the_current_values_are_kept_and_the_reason_says_so(tmp_path):
    from diagnose.optimizer.pipeline import build
    from diagnose.optimizer.search import SearchOptions, search

    task = context(FOLDER)
    options = SearchOptions(str(FOLDER / "before.py"), device="cpu", cache_root=str(tmp_path))
    result = search(REWRITE, task, REWRITE.check(task).plan, options)
    assert dict(result.chosen) == {"num_warps": 4, "num_stages": 3}
    assert "chosen by timing only" in result.ranked_by
    built = build(task, ["launch-options"], options)
    assert built.steps == () and "timing only" in dict(built.skipped)["launch-options"]
    with pytest.raises(NotApplicable):
        REWRITE.apply(task.with_params(dict(result.chosen)))


@pytest.mark.slow
def test_every_style_stays_correct_on_the_interpreter(tmp_path):
    """The golden rewrites of the task file and of the three module styles, verified against the
    original code on fresh inputs (correctness and anti-cheat) by the harness."""
    from diagnose.task import load_task
    from diagnose.task.specs import Inputs
    from diagnose.verify.harness import CheckOptions, verify

    def one(style: str):
        if style == "task":
            task = load_task(FOLDER / "before.py", FOLDER / "after.py")
            initial = FOLDER / "before.py"
        else:
            module = tmp_path / f"{style}_ops.py"
            shutil.copy(FOLDER / f"before_{style}.py", module)
            task = load_task(module, FOLDER / f"after_{style}.py", Inputs(calls=(CALLS[style],)), tmp_path / "cache")
            initial = task.reference_path
        return style, verify(task, CheckOptions(device="cpu", seeds=SEEDS, soak=SOAK, initial=initial))

    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = dict(pool.map(one, ["task", *CALLS]))
    for style, verdict in verdicts.items():
        assert verdict.failure is None, (style, verdict.failure)
        assert verdict.passed, (style, [c for c in (*verdict.cases, *verdict.checks) if not c.passed])


@pytest.mark.gpu
def test_on_a_device_the_search_times_the_current_values_against_the_nearest(tmp_path):
    from diagnose.optimizer.search import SearchOptions, search

    task = context(FOLDER)
    options = SearchOptions(str(FOLDER / "before.py"), device="cuda", cache_root=str(tmp_path))
    result = search(REWRITE, task, REWRITE.check(task).plan, options)
    measured = [t for t in result.trials if t.measured]
    assert measured and measured[0].values == (("num_warps", 4), ("num_stages", 3))
    assert len(measured) <= REWRITE.timed_configs and "time on cuda" in result.ranked_by


def test_a_kernel_parameter_named_num_stages_leaves_only_num_warps():
    """Triton binds `num_stages` to the kernel's parameter of that name: a launch option of the same
    name would be a second value for it (Liger's neighborhood mask kernel takes both as constexprs;
    `rejected_option_named_param.py` is the one that takes num_warps too)."""
    source = """import torch
import triton
import triton.language as tl


@triton.jit
def _rows(x_ptr, n_rows, n_cols, BLOCK: tl.constexpr, num_stages: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + row * n_cols + offs, 1.0, mask=offs < n_cols)


def fill(x):
    _rows[(4,)](x, x.shape[0], x.shape[1], triton.next_power_of_2(x.shape[1]), 2)
    return x
"""
    pre = REWRITE.check(RewriteContext(source))
    assert pre.holds and pre.plan.stages is None, pre.reason
    new = REWRITE.apply(RewriteContext(source, params=(("num_warps", 8), ("num_stages", 4))))
    assert "triton.next_power_of_2(x.shape[1]), 2, num_warps=8)" in new
