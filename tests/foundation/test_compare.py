"""Correctness decisions of the comparator, on constructed tensors."""

import pytest
import torch

from diagnose.verify.compare import compare_case, compare_one
from diagnose.verify.oracle import measure
from diagnose.verify.tolerances import tolerance


def test_equal_tensors_pass_with_zero_error():
    ref = torch.randn(100)
    ok, max_abs, max_rel, reason = compare_one(ref, ref.clone())
    assert ok and max_abs == 0 and max_rel == 0 and reason is None


@pytest.mark.parametrize(
    "dtype, inside, outside",
    [
        (torch.float32, 5e-5, 1e-3),
        (torch.float16, 4e-3, 5e-2),
        (torch.bfloat16, 4e-3, 1e-1),
    ],
)
def test_per_dtype_tolerance(dtype, inside, outside):
    ref = torch.full((64,), 0.5, dtype=dtype)
    assert compare_one(ref, (ref.float() + inside).to(dtype))[0]
    ok, _, _, reason = compare_one(ref, (ref.float() + outside).to(dtype))
    assert not ok and "outside atol" in reason


def test_integers_must_match_exactly():
    ref = torch.arange(10)
    out = ref.clone()
    out[3] += 1
    assert not compare_one(ref, out)[0]
    assert tolerance("torch.int64") == (0.0, 0.0)


def test_shape_and_dtype_mismatches_fail():
    ref = torch.randn(4, 5)
    assert "shape" in compare_one(ref, torch.randn(5, 4))[3]
    assert "dtype" in compare_one(ref, ref.double())[3]


def test_nan_where_reference_has_none_fails():
    ref = torch.randn(8)
    out = ref.clone()
    out[2] = float("nan")
    ok, _, _, reason = compare_one(ref, out)
    assert not ok and "NaN" in reason


def test_nan_where_reference_has_nan_passes():
    ref = torch.tensor([1.0, float("nan"), 3.0])
    assert compare_one(ref, ref.clone())[0]
    assert not compare_one(ref, torch.tensor([1.0, 2.0, 3.0]))[0]


def test_inf_of_the_other_sign_fails():
    ref = torch.tensor([1.0, float("inf")])
    assert compare_one(ref, ref.clone())[0]
    assert not compare_one(ref, torch.tensor([1.0, float("-inf")]))[0]
    assert not compare_one(torch.tensor([1.0, 2.0]), torch.tensor([1.0, float("inf")]))[0]


def test_case_reports_worst_error_and_count_mismatch():
    refs = [torch.ones(3), torch.zeros(2)]
    case = compare_case("g", 0, refs, [torch.ones(3) + 1e-5, torch.zeros(2)])
    assert case.passed and case.max_abs_err == pytest.approx(1e-5, rel=1e-2)
    assert not compare_case("g", 0, refs, refs[:1]).passed


def test_a_tensor_compared_in_steps_gives_what_one_pass_gives(monkeypatch):
    from diagnose.verify import compare

    torch.manual_seed(0)
    ref = torch.randn(1000, 37)
    out = ref + 1e-6 * torch.randn_like(ref)
    out[500, 3] += 0.5  # one element outside, in a later step
    out[999, 36] = float("nan")
    whole = compare_one(ref, out)
    monkeypatch.setattr(compare, "CHUNK", 1000)
    stepped = compare_one(ref, out)
    assert (stepped[0], stepped[3]) == (whole[0], whole[3]) and "1 NaN where the reference has none" in whole[3]
    out[999, 36] = ref[999, 36]
    ok, max_abs, _, reason = compare_one(ref, out)
    assert not ok and reason == "1 of 37000 elements outside atol=0.0001, rtol=0.0001"
    assert max_abs == pytest.approx(0.5, rel=1e-4)
    ref[10, 0] = float("inf")
    assert "Inf" in compare_one(ref, out)[3], "an Inf in the reference that the output lacks, in the first step"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_the_whole_tensor_pass_gives_what_the_stepped_pass_gives(dtype):
    """Where every element is within tolerance the comparison takes a few operations over the whole
    tensor; its errors are those the stepped pass in float64 reports."""
    from diagnose.verify.compare import CHUNK, within_at_once

    torch.manual_seed(1)
    ref = torch.randn(3 * CHUNK + 17).to(dtype)
    out = (ref.double() * (1 + 1e-5 * torch.randn(ref.shape, dtype=torch.float64))).to(dtype)
    atol, rtol = tolerance(str(dtype))
    fast = within_at_once(ref, out, atol, rtol)
    exact = (out.double() - ref.double()).abs()
    assert fast is not None and fast[0] and fast[1] == pytest.approx(float(exact.max()), rel=1e-2)
    assert compare_one(ref, out) == fast
    # what the whole-tensor pass leaves to the stepped one: an Inf, a NaN, an element outside, values below atol
    for broken in (float("inf"), float("nan")):
        bad = out.clone()
        bad[CHUNK + 5] = broken
        assert within_at_once(ref, bad, atol, rtol) is None and not compare_one(ref, bad)[0]
    inf_ref = ref.clone()
    inf_ref[7] = float("inf")
    assert within_at_once(inf_ref, out, atol, rtol) is None
    assert within_at_once(ref * 1e-6, torch.zeros_like(ref), atol, rtol) is None


def test_values_below_atol_are_judged_by_their_norm_in_the_whole_tensor_pass():
    """An fp16 softmax over wide rows lies below atol everywhere: an honest output passes in the whole-tensor
    pass (the stepped float64 pass took seconds per such output), and one with half its values zeroed
    still fails there, by its norm, with the stepped pass's message."""
    from diagnose.verify.compare import within_at_once

    torch.manual_seed(3)
    ref = torch.softmax(torch.randn(64, 8192), dim=-1).half()
    honest = (ref.float() * (1 + 1e-3 * torch.randn(ref.shape))).half()
    atol, rtol = tolerance("torch.float16")
    fast = within_at_once(ref, honest, atol, rtol)
    assert fast is not None and fast[0] and compare_one(ref, honest) == fast
    half = honest.clone()
    half[:, ::2] = 0
    assert within_at_once(ref, half, atol, rtol) is None
    passed, _, _, why = compare_one(ref, half)
    assert not passed and "output norm" in why


def test_the_whole_tensor_pass_in_steps_reuses_its_buffers_and_finds_the_same(monkeypatch):
    """Steps of `AT_ONCE` elements, the last one short, write into one set of buffers: each step's result
    is its own, not the last step's left over."""
    from diagnose.verify import compare

    torch.manual_seed(2)
    ref = torch.randn(10_007)
    out = ref * (1 + 1e-6 * torch.randn_like(ref))
    out[123] = ref[123] + 3e-5  # the worst absolute error, in the first step
    atol, rtol = tolerance("torch.float32")
    whole = compare.within_at_once(ref, out, atol, rtol)
    monkeypatch.setattr(compare, "AT_ONCE", 1000)
    stepped = compare.within_at_once(ref, out, atol, rtol)
    assert whole is not None and stepped is not None and stepped[0]
    assert stepped[1] == pytest.approx(whole[1], rel=1e-6) and stepped[2] == pytest.approx(whole[2], rel=1e-6)
    for where in (5, 9_999, 10_006):  # first step, a middle one, the short last one
        bad = out.clone()
        bad[where] += 1.0
        assert compare.within_at_once(ref, bad, atol, rtol) is None, where


def cancelling_sums(offset: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Row sums of float32 values computed as `(x + offset).sum() - offset * n` (off the truth by about
    offset * 1e-4 here), and the true sums in float64."""
    x = torch.randn(64, 1024, generator=torch.Generator().manual_seed(0))
    return (x + offset).sum(-1) - offset * x.shape[-1], x.double().sum(-1)


def test_an_exact_enough_reference_gets_no_oracle():
    reference, exact = cancelling_sums(0.0)
    assert measure([reference], [exact]) == [None]


def test_a_reference_off_its_float64_run_gets_an_oracle_with_its_own_error_as_slack():
    reference, exact = cancelling_sums(10000.0)
    (oracle,) = measure([reference], [exact])
    error = (reference.double() - exact).abs()
    assert oracle.off > 0 and oracle.worst == pytest.approx(float(error.max()), rel=1e-5)
    assert float(error.max()) <= oracle.slack <= 2 * float(error.max())
    assert oracle.values.dtype == torch.float32


def test_a_float64_run_that_is_another_function_is_no_oracle():
    reference = torch.randn(4096)
    assert measure([reference], [torch.randn(4096, dtype=torch.float64)]) == [None]  # a random draw per run
    assert measure([reference, reference], [reference.double()]) == [None, None]  # outputs do not pair up


def test_with_an_oracle_an_output_passes_within_the_references_error_of_the_truth_and_no_further():
    reference, exact = cancelling_sums(10000.0)
    (oracle,) = measure([reference], [exact])
    assert not compare_one(reference, exact.float())[0]  # the truth is "wrong" against the reference alone
    assert compare_one(reference, exact.float(), oracle=oracle)[0]
    worse, _ = cancelling_sums(1000000.0)
    ok, _, _, reason = compare_one(reference, worse, oracle=oracle)
    assert not ok and "float64 oracle" in reason


def test_with_an_oracle_an_element_matching_the_reference_still_passes():
    # A threshold the two precisions decide differently: the reference is off the truth at one element
    # by far more than its typical error there, and a candidate that agrees with the reference passes.
    reference = torch.linspace(-1, 1, 4096)
    exact = reference.double().clone()
    exact[7] += 0.5
    exact[1:] += 1e-3 * torch.randn(4095, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    (oracle,) = measure([reference], [exact])
    assert oracle.slack < 0.1  # a percentile: the one far element does not widen the whole output's slack
    candidate = exact.float()
    candidate[7] = reference[7]  # with the reference at the threshold, with the truth elsewhere
    assert compare_one(reference, candidate, oracle=oracle)[0]
    candidate[7] = reference[7] + 0.25  # with neither there
    assert not compare_one(reference, candidate, oracle=oracle)[0]


def test_a_comparison_asked_only_whether_it_passes_stops_at_the_first_failing_steps():
    """The ghost replay's no-op output is NaN from its first element: `early` settles it in the first
    round of steps and says the count is a floor; the whole count is the default."""
    from diagnose.verify.compare import CHUNK, WORKERS

    ref = torch.randn(WORKERS * 4 * CHUNK * 3)
    ghost = torch.full_like(ref, float("nan"))
    passed, _, _, why = compare_one(ref, ghost, early=True)
    assert not passed and why.startswith(f"at least {WORKERS * 4 * CHUNK} NaN where the reference has none")
    passed, _, _, why = compare_one(ref, ghost)
    assert not passed and why.startswith(f"{ref.numel()} NaN where the reference has none")
    tail = ref.clone()
    tail[-1] += 1.0  # a failure in the last step only: early or not, every step is looked at
    assert compare_one(ref, tail, early=True) == compare_one(ref, tail)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_honest_rounding_below_atol_passes_and_another_result_does_not(dtype):
    """Where every value lies below atol, the difference must be small against the reference's norm:
    an output rounded differently (one unit in the last place here and there) passes; the row's mean
    everywhere, and another input's result, do not."""
    torch.manual_seed(4)
    logits = 0.1 * torch.randn(32, 4096)
    exact = torch.softmax(logits.double(), dim=-1)
    scale = 1e-2 if dtype == torch.float32 else 1.0  # fp32's atol is 1e-4: values below it
    ref = (exact * scale).to(dtype)
    honest = (exact * scale * (1 + 2**-9 * torch.randn(exact.shape, dtype=torch.float64))).to(dtype)
    assert compare_one(ref, honest)[0], compare_one(ref, honest)
    mean = torch.full_like(ref, scale / 4096)
    other = (torch.softmax(0.1 * torch.randn(32, 4096).double(), dim=-1) * scale).to(dtype)
    for wrong in (mean, other):
        passed, _, _, why = compare_one(ref, wrong)
        assert not passed and "off the reference by" in why, why


def test_steps_on_the_pool_leave_torchs_thread_count_as_they_found_it(monkeypatch):
    """The pooled steps run each torch operation on one core; overlapping comparisons (a sweep's, on
    threads of one parent) share that setting, and the last one to end puts torch's count back."""
    import threading

    from diagnose.verify import compare

    monkeypatch.setattr(compare, "AT_ONCE", 1000)
    monkeypatch.setattr(compare, "WORKERS", 3)
    before = torch.get_num_threads()
    torch.manual_seed(4)
    ref = torch.randn(20_011)
    out = ref * (1 + 1e-6 * torch.randn_like(ref))
    seen = []
    real_step = compare.step_within
    monkeypatch.setattr(compare, "step_within", lambda *a: seen.append(torch.get_num_threads()) or real_step(*a))
    results = []
    threads = [threading.Thread(target=lambda: results.append(compare.compare_one(ref, out))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r[0] for r in results)
    assert seen and set(seen) == {1}  # every pooled step on one core
    assert torch.get_num_threads() == before and compare.one_core_per_op.users == 0
    assert compare.equal(ref, ref.clone()) and not compare.equal(ref, out)
    assert torch.get_num_threads() == before
