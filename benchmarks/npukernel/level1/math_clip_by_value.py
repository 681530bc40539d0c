"""Clip by value: out = min(max(x, clip_min), clip_max), bounds as one-element tensors.

Derived from NPUKernelBench level1 Math/ClipByValue (tf.clip_by_value as torch.clamp with
tensor bounds); inputs drawn as there: x = 1 + 9*rand, min = 1 + 2*rand, max = 4 + 6*rand.

The Triton version is the plain first conversion of a clamp: a 1-D grid of BLOCK=1024
elements per program with a masked tail, both bounds loaded from their pointers in
every program, tl.maximum/tl.minimum and one store; correct for any size, with the
usual memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "math", "op": "clip_by_value", "source": "NPUKernelBench level1/Math/ClipByValue"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, clip_min, clip_max):
        return torch.clamp(x, min=clip_min, max=clip_max)


@triton.jit
def clip_kernel(x_ptr, min_ptr, max_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    lo = tl.load(min_ptr)
    hi = tl.load(max_ptr)
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.minimum(tl.maximum(x, lo), hi)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, clip_min, clip_max):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        clip_kernel[(triton.cdiv(n, BLOCK),)](x, clip_min, clip_max, out, n, BLOCK=BLOCK)
        return out


def _case(shape, dtype):
    x = (torch.rand(shape) * 9 + 1).to(dtype)
    lo = (torch.rand(1) * 2 + 1).to(dtype)
    hi = (torch.rand(1) * 6 + 4).to(dtype)
    return [x, lo, hi]


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
