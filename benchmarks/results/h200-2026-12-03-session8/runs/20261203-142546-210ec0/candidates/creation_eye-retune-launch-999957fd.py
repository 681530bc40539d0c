"""Identity matrix: out = torch.eye(num_rows, num_columns) in the dtype of a carrier tensor.

Derived from NPUKernelBench level1 TensorCreation/Eye (an input tensor gives the dtype
and device, num_rows and num_columns are ints; NPUKernelBench's optional batch_shape
broadcast is left out here, this entry builds one n x m matrix).

The Triton version is the plain first conversion of a generator: a 2-D grid of (row,
BLOCK=1024 columns), each program writing 1 where column == row and 0 elsewhere, with
a masked tail; a write-only, memory-bound kernel with the usual tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "creation", "op": "eye", "source": "NPUKernelBench level1/TensorCreation/Eye"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, like, num_rows, num_columns):
        return torch.eye(num_rows, num_columns, dtype=like.dtype, device=like.device)


@triton.jit
def eye_kernel(out_ptr, M, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < M
    vals = tl.where(cols == row, 1.0, 0.0)
    tl.store(out_ptr + row * M + cols, vals.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, like, num_rows, num_columns):
        out = torch.empty((num_rows, num_columns), dtype=like.dtype, device=like.device)
        BLOCK = 8192
        eye_kernel[(num_rows, triton.cdiv(num_columns, BLOCK))](out, num_columns, BLOCK=BLOCK, num_warps=8)
        return out


def _case(n, m, dtype):
    return [torch.randn(8, dtype=dtype), n, m]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "n16384_m16384_fp32": lambda: _case(16384, 16384, torch.float32),
        "n32768_m16384_fp16": lambda: _case(32768, 16384, torch.float16),
        "n8192_m24576_bf16": lambda: _case(8192, 24576, torch.bfloat16),
        "test_n37_m53_fp32": lambda: _case(37, 53, torch.float32),
    }


def get_inputs():
    return _case(16384, 16384, torch.float32)


def get_init_inputs():
    return []
