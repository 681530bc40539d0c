"""Arange: out = torch.arange(start, end, step) as float32; start/end/step 0-d int64 tensors.

Derived from NPUKernelBench level1 TensorCreation/Arange (start, end, step passed as
tensors and read with .item(); positive and negative steps). Each draw picks a random
start and step and a length n, with end = start + n * step; values stay below 2^31, so
the integer value of each element is exact before its single rounding to fp32.

The Triton version is the plain first conversion of a generator: the length taken as
len(range(start, end, step)), a 1-D grid of BLOCK=1024 elements per program with a
masked tail, each element start + i * step computed in int64 and stored as fp32; a
write-only, memory-bound kernel with the usual tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "creation", "op": "arange", "source": "NPUKernelBench level1/TensorCreation/Arange"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, start, end, step):
        return torch.arange(start.item(), end.item(), step.item(), dtype=torch.float32, device=start.device)


def _autotune_bench(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=8),
        triton.Config({"BLOCK": 2048}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
        triton.Config({"BLOCK": 2048}, num_warps=16),
        triton.Config({"BLOCK": 4096}, num_warps=4),
    ],
    key=["n"],
    do_bench=_autotune_bench,
)
@triton.jit
def arange_kernel(out_ptr, start, step, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    vals = start + offs.to(tl.int64) * step
    tl.store(out_ptr + offs, vals.to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, start, end, step):
        device = start.device
        start, end, step = start.item(), end.item(), step.item()
        n = len(range(start, end, step))
        out = torch.empty(n, dtype=torch.float32, device=device)
        arange_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, start, step, n)
        return out


def _case(n, positive):
    start = int(torch.randint(-1000, 1000, (1,)))
    step = int(torch.randint(1, 4, (1,))) * (1 if positive else -1)
    return [torch.tensor(v, dtype=torch.int64) for v in (start, start + n * step, step)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "n268435456_fp32": lambda: _case(268435456, True),
        "n100000007_negstep_fp32": lambda: _case(100000007, False),
        "test_n4099_negstep_fp32": lambda: _case(4099, False),
    }


def get_inputs():
    return _case(268435456, True)


def get_init_inputs():
    return []
