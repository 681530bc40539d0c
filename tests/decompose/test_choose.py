"""The choosing policy: torch unless a verified Triton candidate (the user's or Inductor's) is the
fastest, or nothing was timed and the user prefers Triton; anything else is a Swap."""

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


def test_among_triton_candidates_the_user_s_kernel_first_untimed_and_the_fastest_timed():
    inductor = Candidate("inductor", "sg0.inductor.py", "passed", None, "why")
    assert choose((TORCH, triton(), inductor), "triton").name == "triton"
    assert choose((TORCH, triton("failed"), inductor), "triton").name == "inductor"
    timed_torch = Candidate("torch", "sg0.py", "reference", 2.0)
    faster = Candidate("inductor", "sg0.inductor.py", "passed", 0.5, "why")
    assert choose((timed_torch, triton(time_ms=1.0), faster), "torch").name == "inductor"


def test_an_unavailable_inductor_candidate_is_no_candidate():
    missing = Candidate("inductor", "", "unavailable", note="Inductor generated no Triton kernel for it")
    choice = choose((TORCH, missing), "triton")
    assert choice.name == "torch" and choice.why.startswith("no Triton candidate")
