"""Linear interpolation with a tensor weight: out = start + weight * (end - start).

Derived from NPUKernelBench level1 Math/Lerp (torch.lerp(start, end, weight), all three
tensors of one shape). The reference is torch.lerp.

The Triton version is the plain first conversion of a ternary elementwise op: a 1-D
grid of BLOCK=1024 elements per program with a masked tail, fp32 arithmetic in
torch.lerp's two-sided form (start + w*d for w < 0.5, end - (1-w)*d otherwise), one
store; correct for any size, with the usual memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "math", "op": "lerp", "source": "NPUKernelBench level1/Math/Lerp"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, start, end, weight):
        return torch.lerp(start, end, weight)


@triton.jit
def lerp_kernel(start_ptr, end_ptr, weight_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(start_ptr + offs, mask=mask).to(tl.float32)
    e = tl.load(end_ptr + offs, mask=mask).to(tl.float32)
    w = tl.load(weight_ptr + offs, mask=mask).to(tl.float32)
    d = e - s
    y = tl.where(w < 0.5, s + w * d, e - (1.0 - w) * d)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, start, end, weight):
        start, end, weight = start.contiguous(), end.contiguous(), weight.contiguous()
        out = torch.empty_like(start)
        n = start.numel()
        BLOCK = 1024
        lerp_kernel[(triton.cdiv(n, BLOCK),)](start, end, weight, out, n, BLOCK=BLOCK)
        return out


def _case(shape, dtype):
    return [torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype),
            torch.rand(shape, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x4096x16384_fp32": lambda: _case((4096, 16384), torch.float32),
        "x8192x16384_fp16": lambda: _case((8192, 16384), torch.float16),
        "test_x37x301_fp32": lambda: _case((37, 301), torch.float32),
    }


def get_inputs():
    return _case((4096, 16384), torch.float32)


def get_init_inputs():
    return []
