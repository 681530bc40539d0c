"""The parent's reading of check cases: nothing to compare is no pass; two seeds' references that
differ only in their last bits are one result."""

import torch

from diagnose.verify.compare import compare_case
from diagnose.verify.judge import HEAD, differs_beyond_tolerance


def test_a_case_with_no_output_to_compare_fails():
    result = compare_case("g", 0, [], [])
    assert not result.passed and result.reason == "no output to compare: the call returns and writes no tensor"


def test_references_that_differ_in_their_last_bits_are_the_same_result():
    # an atomic reduction on a device sums in another order on every run: a deterministic candidate
    # that matches both is not "cached"
    a = torch.randn(1000, dtype=torch.float32)
    noisy = a + a.abs() * 2**-22
    assert not differs_beyond_tolerance([a], [noisy], {})
    assert differs_beyond_tolerance([a], [torch.randn(1000)], {})
    assert differs_beyond_tolerance([a], [a, a], {})
    assert not differs_beyond_tolerance([], [], {})


def test_outputs_alike_in_their_first_elements_are_still_compared_whole():
    a = torch.randn(3 * HEAD)
    tail_differs = a.clone()
    tail_differs[-10:] += 1.0
    assert differs_beyond_tolerance([a], [tail_differs], {})
    assert not differs_beyond_tolerance([a], [a.clone()], {})
    assert differs_beyond_tolerance([a], [a.reshape(3, HEAD)], {})  # the same values in another shape
