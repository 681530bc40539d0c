"""Fill: out = torch.full(dims, value) with dims a list of ints and value a one-element tensor.

Derived from NPUKernelBench level1 TensorCreation/Fill (torch.full(dims, value.item(),
dtype=value.dtype)); the output takes value's dtype and device.

The Triton version is the plain first conversion of a generator: the output allocated
from dims, a 1-D grid of BLOCK=1024 elements per program with a masked tail, each
program loading value from its pointer (no host sync) and storing it; a write-only,
memory-bound kernel with the usual tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "creation", "op": "fill", "source": "NPUKernelBench level1/TensorCreation/Fill"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, dims, value):
        return torch.full(dims, value.item(), dtype=value.dtype, device=value.device)


def _autotune_bench(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 2048}, num_warps=16),
        triton.Config({"BLOCK": 4096}, num_warps=16),
    ],
    key=["n"],
    do_bench=_autotune_bench,
)
@triton.jit
def fill_kernel(out_ptr, value_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(value_ptr)
    vals = tl.zeros([BLOCK], dtype=v.dtype) + v
    tl.store(out_ptr + offs, vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, dims, value):
        out = torch.empty(dims, dtype=value.dtype, device=value.device)
        n = out.numel()
        fill_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, value, n)
        return out


def _case(dims, dtype):
    return [list(dims), torch.randn(1, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "dims16384x16384_fp32": lambda: _case((16384, 16384), torch.float32),
        "dims64x2048x4096_fp16": lambda: _case((64, 2048, 4096), torch.float16),
        "test_dims7x37x41_fp32": lambda: _case((7, 37, 41), torch.float32),
    }


def get_inputs():
    return _case((16384, 16384), torch.float32)


def get_init_inputs():
    return []
