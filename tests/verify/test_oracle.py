"""The reference job's float64 oracle (`diagnose/verify/jobs.py` `Exact`): when it is run and when not."""

import torch
import torch.nn as nn

from diagnose.verify import instrument, oracle
from diagnose.verify.jobs import Exact


class CancellingSum(nn.Module):
    """Row sums as `(x + 10000).sum(-1) - 10000 * n`: off the truth by about 1, beyond float32's tolerance."""

    def forward(self, x):
        return (x + 10000.0).sum(-1) - 10000.0 * x.shape[-1]


def case():
    x = torch.randn(16, 1024, generator=torch.Generator().manual_seed(0))
    return [x], [CancellingSum()(x)]


def test_a_torch_reference_off_the_truth_gets_its_oracle():
    inputs, outputs = case()
    (found,) = Exact(CancellingSum(), instrument.LaunchLog()).oracles("g", inputs, outputs, "cpu", 0.01)
    assert found["off"] > 0 and found["values"].dtype == torch.float32
    assert torch.allclose(found["values"].double(), inputs[0].double().sum(-1), atol=1e-3)


def test_a_slow_forward_gets_no_oracle_and_says_so():
    inputs, outputs = case()
    exact = Exact(CancellingSum(), instrument.LaunchLog())
    assert exact.oracles("g", inputs, outputs, "cpu", oracle.BUDGET_S + 1) == []
    assert "took" in exact.note and exact.model is None  # its memory given back; later cases get none either
    assert exact.oracles("g", inputs, outputs, "cpu", 0.01) == []


def test_a_reference_that_launched_triton_kernels_gets_no_oracle():
    inputs, outputs = case()
    launches = instrument.LaunchLog(launches={"row_sum_kernel": 1})
    assert Exact(CancellingSum(), launches).oracles("g", inputs, outputs, "cpu", 0.01) == []


def test_a_model_that_fails_in_float64_gets_no_oracle():
    class HalfOnly(nn.Module):
        def forward(self, x):
            if x.dtype == torch.float64:
                raise TypeError("float32 only")
            return x * 2

    x = torch.randn(8)
    assert Exact(HalfOnly(), instrument.LaunchLog()).oracles("g", [x], [x * 2], "cpu", 0.01) == []


def test_the_oracle_draws_leave_the_reference_random_state_as_it_was():
    class Noisy(nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x)

    x = torch.randn(64)
    torch.manual_seed(3)
    Exact(Noisy(), instrument.LaunchLog()).oracles("g", [x], [x.clone()], "cpu", 0.01)
    after = torch.rand(4)
    torch.manual_seed(3)
    assert torch.equal(after, torch.rand(4))


def test_a_group_exact_enough_on_its_first_case_runs_no_oracle_on_its_others():
    x = torch.randn(16, 1024, generator=torch.Generator().manual_seed(0))
    exact = Exact(nn.Identity(), instrument.LaunchLog())
    assert exact.oracles("plain", [x], [x.clone()], "cpu", 0.01) == []
    exact.model = oracle.float64_model(CancellingSum())  # were the reference off now, the group is settled
    assert exact.oracles("plain", [x], [CancellingSum()(x)], "cpu", 0.01) == []
    assert exact.oracles("other", [x], [CancellingSum()(x)], "cpu", 0.01) != []


def test_a_reference_that_imported_triton_only_once_it_ran_gets_no_oracle():
    # Unwatched (the task file did not import triton): triton in sys.modules now means the forward may
    # have launched kernels nobody counted.
    import triton  # noqa: F401 - as a forward that imports it would

    inputs, outputs = case()
    exact = Exact(CancellingSum(), instrument.LaunchLog(), watched=False)
    assert exact.oracles("g", inputs, outputs, "cpu", 0.01) == []
