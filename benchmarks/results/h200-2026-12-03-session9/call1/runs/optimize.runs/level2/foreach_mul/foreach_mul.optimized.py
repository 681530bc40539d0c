"""Foreach multiply of two tensor lists: out_i = x_i * y_i.

Derived from NPUKernelBench level2 Foreach/ForeachMulList (torch._foreach_mul(xs, ys)).
The forward's inputs are the 2k tensors x_1..x_k, y_1..y_k (flat, shapes differ from
one pair to the next); the result is a list of k tensors.

The Triton version is the plain first conversion: one launch of a 1-D elementwise
kernel per pair (BLOCK=1024 elements per program, masked tail, fp32 product, one
store). Correct for any lists; it pays one launch per pair, which a multi-tensor-apply
kernel (one launch covering every pair) avoids.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "foreach", "op": "mul", "source": "NPUKernelBench level2/Foreach/ForeachMulList"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, *tensors):
        k = len(tensors) // 2
        return list(torch._foreach_mul(list(tensors[:k]), list(tensors[k:])))


@triton.jit
def mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * y).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, *tensors):
        k = len(tensors) // 2
        outs = []
        BLOCK = 4096
        for x, y in zip(tensors[:k], tensors[k:]):
            x, y = x.contiguous(), y.contiguous()
            out = torch.empty_like(x)
            n = x.numel()
            mul_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=4)
            outs.append(out)
        return outs


def _lists(shapes, dtype):
    xs = [torch.randn(s, dtype=dtype) for s in shapes]
    ys = [torch.randn(s, dtype=dtype) for s in shapes]
    return xs + ys


# 8 large pairs of different shapes (about 1.2 GB of fp32 per list).
_LARGE = [(4096, 4096), (8192, 4096), (11008, 4096), (4096, 11008), (32000, 4096),
          (1024, 8192), (4096,), (6144, 4096)]
# 64 mid-sized pairs, as an optimizer's parameter list (about 900 MB of bf16 per list).
_MANY = [(1024 + 64 * i, 2048 + 128 * (i % 5)) for i in range(64)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "large8_fp32": lambda: _lists(_LARGE, torch.float32),
        "many64_bf16": lambda: _lists(_MANY, torch.bfloat16),
        "test_5pairs_fp32": lambda: _lists([(37, 41), (129,), (3, 5, 67), (1000,), (17, 2)], torch.float32),
    }


def get_inputs():
    return _lists(_LARGE, torch.float32)


def get_init_inputs():
    return []
