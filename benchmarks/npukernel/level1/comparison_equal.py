"""Elementwise equality: out = (x == y), a bool tensor.

Derived from NPUKernelBench level1 Comparison/Equal (aclnnEqTensor, same-shape inputs).
The inputs are integer-valued floats in [0, 4) so that about a quarter of the elements
compare equal.

The Triton version is the plain first conversion of a binary comparison: a 1-D grid
of BLOCK=1024 elements per program with a masked tail, two loads, one compare and a
store into the bool output; correct for any size, with the usual memory-bound tuning
left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "comparison", "op": "equal", "source": "NPUKernelBench level1/Comparison/Equal"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.eq(x, y)


@triton.jit
def equal_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x == y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty(x.shape, dtype=torch.bool, device=x.device)
        n = x.numel()
        BLOCK = 1024
        equal_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
        return out


def _case(shape, dtype):
    return [torch.randint(0, 4, shape).to(dtype), torch.randint(0, 4, shape).to(dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x8192x16384_fp32": lambda: _case((8192, 16384), torch.float32),
        "x16384x16384_fp16": lambda: _case((16384, 16384), torch.float16),
        "test_x37x301_fp32": lambda: _case((37, 301), torch.float32),
    }


def get_inputs():
    return _case((8192, 16384), torch.float32)


def get_init_inputs():
    return []
