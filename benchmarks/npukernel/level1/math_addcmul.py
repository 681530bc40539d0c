"""Addcmul: out = x + value * t1 * t2, with value a one-element tensor.

Derived from NPUKernelBench level1 Math/Addcmul (aclnnAddcmul: input_data + input_x1 *
input_x2 * value). As there for bf16, the reference computes in fp32 and rounds once to
the input dtype.

The Triton version is the plain first conversion of a ternary elementwise op: a 1-D
grid of BLOCK=1024 elements per program with a masked tail, value read once per
program from its pointer, fp32 arithmetic, one store; correct for any size, with the
usual memory-bound tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "math", "op": "addcmul", "source": "NPUKernelBench level1/Math/Addcmul"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, t1, t2, value):
        out = x.float() + t1.float() * t2.float() * value.float()
        return out.to(x.dtype)


@triton.jit
def addcmul_kernel(x_ptr, t1_ptr, t2_ptr, value_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(value_ptr).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    a = tl.load(t1_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(t2_ptr + offs, mask=mask).to(tl.float32)
    y = x + a * b * v
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, t1, t2, value):
        x, t1, t2 = x.contiguous(), t1.contiguous(), t2.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        addcmul_kernel[(triton.cdiv(n, BLOCK),)](x, t1, t2, value, out, n, BLOCK=BLOCK)
        return out


def _case(shape, dtype):
    return [torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype),
            torch.randn(shape, dtype=dtype), torch.randn(1, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "x4096x16384_fp32": lambda: _case((4096, 16384), torch.float32),
        "x8192x16384_fp16": lambda: _case((8192, 16384), torch.float16),
        "x8192x16384_bf16": lambda: _case((8192, 16384), torch.bfloat16),
        "test_x37x301_fp32": lambda: _case((37, 301), torch.float32),
    }


def get_inputs():
    return _case((4096, 16384), torch.float32)


def get_init_inputs():
    return []
