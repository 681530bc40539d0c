"""Expand and materialize: out = x.expand(B, M, N).contiguous() for x of shape [B, 1, N].

Derived from NPUKernelBench level2 TensorMove/ExpandV2 (broadcast a tensor to a larger
shape; NPUKernelBench's cases include int64, so one group here is int64). M is an int
input.

The Triton version is the plain first conversion of a broadcast copy: a 2-D grid of
(output row over B * M, BLOCK=1024 columns), each program loading the source row
x[b, 0, :] chunk with a masked tail and storing it; correct for any shape. Every
program re-reads its source row, and the copy is write-dominated and memory-bound.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "tensor_move", "op": "expand", "source": "NPUKernelBench level2/TensorMove/ExpandV2"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, m):
        return x.expand(x.shape[0], m, x.shape[2]).contiguous()


@triton.jit
def expand_kernel(x_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
    r = tl.program_id(0)  # output row over B * M
    b = r // M
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    v = tl.load(x_ptr + b * N + cols, mask=mask)
    tl.store(out_ptr + r * N + cols, v, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, m):
        x = x.contiguous()
        B, _, N = x.shape
        out = torch.empty((B, m, N), dtype=x.dtype, device=x.device)
        BLOCK = 4096
        expand_kernel[(B * m, triton.cdiv(N, BLOCK))](x, out, m, N, BLOCK=BLOCK, num_warps=4)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "b64_m1024_n4096_fp32": lambda: [torch.randn(64, 1, 4096), 1024],
        "b32_m2048_n4096_fp16": lambda: [torch.randn(32, 1, 4096, dtype=torch.float16), 2048],
        "b16_m512_n8192_int64": lambda: [torch.randint(-2**40, 2**40, (16, 1, 8192)), 512],
        "test_b3_m5_n1037_fp32": lambda: [torch.randn(3, 1, 1037), 5],
    }


def get_inputs():
    return [torch.randn(64, 1, 4096), 1024]


def get_init_inputs():
    return []
