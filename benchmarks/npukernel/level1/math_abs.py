"""Elementwise absolute value: out = |x|.

Derived from NPUKernelBench level1 Math/AbsMath (aclnnAbs semantics, float inputs).

The Triton version is the plain first conversion of an elementwise op: the input
flattened, a 1-D grid of BLOCK=1024 elements per program with a masked tail,
one load and one store per element; it is correct for any size and leaves the
usual memory-bound tuning (block size, warps, vector width) to be found.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "math", "op": "abs", "source": "NPUKernelBench level1/Math/AbsMath"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.abs(x)


@triton.jit
def abs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.abs(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        abs_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x8192x16384_fp32": lambda: [torch.randn(8192, 16384)],
        "x16384x16384_fp16": lambda: [torch.randn(16384, 16384, dtype=torch.float16)],
        "x4096x32768_bf16": lambda: [torch.randn(4096, 32768, dtype=torch.bfloat16)],
        "test_x37x301_fp32": lambda: [torch.randn(37, 301)],
    }


def get_inputs():
    return [torch.randn(8192, 16384)]


def get_init_inputs():
    return []
