"""FastGelu: out = x * sigmoid(1.702 * x).

Derived from NPUKernelBench level2 Activation/FastGelu; the reference is NPUKernelBench's
overflow-safe form, x * exp(0.851 * (x - |x|)) / (1 + exp(-1.702 * |x|)).

The Triton version is the plain first conversion of a unary elementwise activation:
a 1-D grid of BLOCK=1024 elements per program with a masked tail, x / (1 + exp(-1.702 x))
in fp32 (an overflow of exp for very negative x gives the correct 0) and one store in
the input dtype; correct for any size, with the usual memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "activation", "op": "fast_gelu", "source": "NPUKernelBench level2/Activation/FastGelu"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        attr = 1.702
        abs_x = torch.abs(x)
        div_down = torch.exp(abs_x * -attr) + 1.0
        div_up = x * torch.exp((x - abs_x) * (attr / 2))
        return div_up / div_down


@triton.jit
def fast_gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x / (1.0 + tl.exp(-1.702 * x))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        fast_gelu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x8192x16384_fp32": lambda: [torch.randn(8192, 16384)],
        "x16384x16384_fp16": lambda: [torch.randn(16384, 16384, dtype=torch.float16)],
        "test_x37x301_fp32": lambda: [torch.randn(37, 301) * 4],
    }


def get_inputs():
    return [torch.randn(8192, 16384)]


def get_init_inputs():
    return []
