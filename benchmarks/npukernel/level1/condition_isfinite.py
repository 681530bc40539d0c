"""Finiteness test: out = isfinite(x), a bool tensor (False at inf, -inf and NaN).

Derived from NPUKernelBench level1 Condition/IsFinite (aclnnIsFinite, float inputs).
The input is randn with about 3% of the positions set to inf, -inf or NaN at random.

The Triton version is the plain first conversion of an elementwise predicate: a 1-D
grid of BLOCK=1024 elements per program with a masked tail, |x| < inf in fp32 (false
for NaN and both infinities) and a store into the bool output; correct for any size,
with the usual memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "condition", "op": "isfinite", "source": "NPUKernelBench level1/Condition/IsFinite"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.isfinite(x)


@triton.jit
def isfinite_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, tl.abs(x) < float("inf"), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape, dtype=torch.bool, device=x.device)
        n = x.numel()
        BLOCK = 1024
        isfinite_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out


def _case(shape, dtype):
    x = torch.randn(shape)
    u = torch.rand(shape)
    x[u < 0.01] = float("inf")
    x[(u >= 0.01) & (u < 0.02)] = float("-inf")
    x[(u >= 0.02) & (u < 0.03)] = float("nan")
    return [x.to(dtype)]


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
