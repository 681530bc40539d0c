"""Reciprocal square root: out = 1 / sqrt(x), on positive inputs (rand + 0.1).

Derived from NPUKernelBench level1 Math/Rsqrt (aclnnRsqrt, float inputs).

The Triton version is the plain first conversion of a unary elementwise op: the input
flattened, a 1-D grid of BLOCK=1024 elements per program with a masked tail (masked
lanes load 1.0), tl.rsqrt in fp32 and one store; correct for any size, with the usual
memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "math", "op": "rsqrt", "source": "NPUKernelBench level1/Math/Rsqrt"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.rsqrt(x)


@triton.jit
def rsqrt_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    tl.store(out_ptr + offs, tl.rsqrt(x).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        rsqrt_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out


def _positive(shape, dtype):
    return [(torch.rand(shape) + 0.1).to(dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x8192x16384_fp32": lambda: _positive((8192, 16384), torch.float32),
        "x16384x16384_fp16": lambda: _positive((16384, 16384), torch.float16),
        "test_x37x301_fp32": lambda: _positive((37, 301), torch.float32),
    }


def get_inputs():
    return _positive((8192, 16384), torch.float32)


def get_init_inputs():
    return []
