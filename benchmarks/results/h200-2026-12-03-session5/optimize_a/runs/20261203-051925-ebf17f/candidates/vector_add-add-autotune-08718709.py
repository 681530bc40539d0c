"""Elementwise vector add: out = x + y (fp32, 1-D).

The Triton version is a plain first conversion: a 1-D grid, one program per
BLOCK_SIZE=128 chunk, masked loads/stores, default num_warps. It is correct
for any n; the small block (many tiny programs) leaves launch/scheduling and
vectorization headroom for a tool to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x + y


def _autotune_bench(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=16),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=4),
    ],
    key=["n_elements"],
    do_bench=_autotune_bench,
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
        add_kernel[grid](x, y, out, n)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "n_2e28": lambda: [torch.randn(2**28), torch.randn(2**28)],
        "n_2e26_odd": lambda: [torch.randn(2**26 + 3), torch.randn(2**26 + 3)],
        "test_n5000": lambda: [torch.randn(5000), torch.randn(5000)],
    }


def get_inputs():
    n = 2**28
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
