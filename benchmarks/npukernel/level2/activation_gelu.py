"""Exact GELU: out = 0.5 * x * (1 + erf(x / sqrt(2))) (F.gelu, approximate="none").

Derived from NPUKernelBench level2 Activation/Gelu. tl.math.erf runs in the Triton
interpreter and on GPUs, so reference and candidate both use the exact erf form.

The Triton version is the plain first conversion of a unary elementwise activation:
the input flattened, a 1-D grid of BLOCK=1024 elements per program with a masked tail,
the formula in fp32 and one store in the input dtype; correct for any size, with the
usual memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "activation", "op": "gelu", "source": "NPUKernelBench level2/Activation/Gelu"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        gelu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x8192x16384_fp32": lambda: [torch.randn(8192, 16384)],
        "x16384x16384_fp16": lambda: [torch.randn(16384, 16384, dtype=torch.float16)],
        "x16384x16384_bf16": lambda: [torch.randn(16384, 16384, dtype=torch.bfloat16)],
        "test_x37x301_fp32": lambda: [torch.randn(37, 301)],
    }


def get_inputs():
    return [torch.randn(8192, 16384)]


def get_init_inputs():
    return []
