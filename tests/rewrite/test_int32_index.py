"""int32-index on real-code idioms: the rewritten module verified against the original on the
interpreter, replaying the call a project's test makes."""

from __future__ import annotations

import pytest

from tests.rewrite.conftest import verify_module_styles
from tests.rewrite.goldens import FIXTURES

FOLDER = FIXTURES / "int32-index"
# Liger's DyT without a bias: the optional pointer argument is None, and the size check must skip it.
# Liger's GRPO loss widens with the tensor method `.cast(tl.int64)`, its mask pointer None too.
# A punica-style LoRA shrink: a pointer expression split over two lines inside `tl.load(...)`.
CALLS = {
    "optional": "dyt(x=f32[4,300], alpha=f32[1], gamma=f32[300], beta=None)",
    "method_cast": "selective_log_softmax(logits=f32[2,5,100], input_ids=i64[2,5](range=(0, 100)), mask=None)",
    "multiline_pointer": "lora_shrink(x=f16[6,64], lora=f16[3,40,64], indices=i64[6](range=(-1, 3)))",
}


@pytest.mark.slow
@pytest.mark.parametrize("style", sorted(CALLS))
def test_the_rewritten_module_stays_correct(tmp_path, style):
    verdict = verify_module_styles(FOLDER, {style: CALLS[style]}, tmp_path)[style]
    assert verdict.failure is None, verdict.failure
    assert verdict.passed, [c for c in (*verdict.cases, *verdict.checks) if not c.passed]


def test_a_widening_by_the_tensor_method_cast_is_read():
    from diagnose.rewrite.rewrite import RewriteContext
    from diagnose.rewrite.table import REWRITES

    pre = REWRITES["int32-index"].check(RewriteContext((FOLDER / "before_method_cast.py").read_text()))
    assert pre.holds and pre.reason == "_selective_log_softmax_kernel: 2 index widening(s) to int64", pre.reason


def test_a_pointer_split_over_lines_inside_the_load_is_read():
    # TritonBench-G's bgmv kernels: the argument printed alone (`a +\n b`) is not an expression by itself;
    # reading it once raised SyntaxError out of the agent's propose step and ended a whole sweep.
    from diagnose.rewrite.rewrite import RewriteContext
    from diagnose.rewrite.table import REWRITES

    pre = REWRITES["int32-index"].check(RewriteContext((FOLDER / "before_multiline_pointer.py").read_text()))
    assert pre.holds and pre.reason == "_lora_shrink_kernel: 1 index widening(s) to int64", pre.reason
