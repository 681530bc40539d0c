"""SwiGLU: a, b = x.chunk(2, dim=-1); out = silu(a) * b.

Derived from NPUKernelBench level2 Activation/SwiGlu (F.silu(x1) * x2 with the halves
split along the last dim).

The Triton version is the plain first conversion: x viewed as rows of 2H, a 2-D grid
of (row, BLOCK=1024 output columns), each program loading a and b from the two halves
of its row with a masked tail, a * sigmoid(a) * b in fp32 (sigmoid as 1 / (1 + exp(-a)))
and one store; correct for any shape, with the usual memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "activation", "op": "swiglu", "source": "NPUKernelBench level2/Activation/SwiGlu"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b


@triton.jit
def swiglu_kernel(x_ptr, out_ptr, H, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < H
    a = tl.load(x_ptr + row * 2 * H + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * H + H + cols, mask=mask, other=0.0).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(out_ptr + row * H + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        H = x.shape[-1] // 2
        rows = x.numel() // (2 * H)
        out = torch.empty((*x.shape[:-1], H), dtype=x.dtype, device=x.device)
        BLOCK = 1024
        swiglu_kernel[(rows, triton.cdiv(H, BLOCK))](x, out, H, BLOCK=BLOCK)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x8192x16384_fp32": lambda: [torch.randn(8192, 2 * 8192)],
        "x4x4096x2x11008_bf16": lambda: [torch.randn(4, 4096, 2 * 11008, dtype=torch.bfloat16)],
        "x16384x2x8192_fp16": lambda: [torch.randn(16384, 2 * 8192, dtype=torch.float16)],
        "test_x3x13x2x150_fp32": lambda: [torch.randn(3, 13, 2 * 150)],
    }


def get_inputs():
    return [torch.randn(8192, 2 * 8192)]


def get_init_inputs():
    return []
