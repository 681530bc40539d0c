"""The choosing policy: torch unless a verified Triton candidate is faster, or nothing was timed and
the user prefers Triton; anything else is a Swap."""

from diagnose.decompose.choose import Candidate, choose

TORCH = Candidate("torch", "sg0.py", "reference")


def triton(status="passed", time_ms=None):
    return Candidate("triton", "k.py", status, time_ms, "why")


def test_no_triton_candidate_keeps_torch():
    assert choose((TORCH,), "triton").name == "torch"


def test_a_failed_triton_candidate_is_swapped_out_whatever_the_preference():
    choice = choose((TORCH, triton("failed")), "triton")
    assert choice.name == "torch" and choice.why.startswith("Swap")


def test_untimed_verified_triton_needs_the_preference():
    assert choose((TORCH, triton()), "torch").name == "torch"
    assert choose((TORCH, triton()), "triton").name == "triton"


def test_timed_the_faster_verified_one_wins():
    timed_torch = Candidate("torch", "sg0.py", "reference", 2.0)
    assert choose((timed_torch, triton(time_ms=1.0)), "torch").name == "triton"
    slower = choose((timed_torch, triton(time_ms=3.0)), "triton")
    assert slower.name == "torch" and "slower" in slower.why
