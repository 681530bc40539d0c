"""Sum over the last dim of a 3-D tensor: x [B, M, N] -> [B, M], in the input dtype.

Derived from the ReduceSumD core of NPUKernelBench level2 Reduce/AddSigmoidMulReduceSumD (the plain
sum is also MultiKernelBench npukernelbench_level1 7_sum). The sum is accumulated in fp32.

The Triton version is a plain first conversion: one program per output element (row of N), looping
over the row in chunks of BLOCK = min(1024, next_pow2(N)) with an fp32 vector accumulator, then one
tl.sum. Correct for any N; with short rows each program does little work, which leaves headroom.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "reduce", "op": "sum_dim",
         "source": "NPUKernelBench level2/Reduce/AddSigmoidMulReduceSumD"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=-1)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        b, m, n = x.shape
        out = torch.empty((b, m), device=x.device, dtype=x.dtype)
        BLOCK = min(1024, triton.next_power_of_2(n))
        row_sum_kernel[(b * m,)](x, out, n, BLOCK=BLOCK, num_warps=4)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "16x4096x4096_fp32": lambda: [torch.randn(16, 4096, 4096)],
        "64x2048x4096_bf16": lambda: [torch.randn(64, 2048, 4096, dtype=torch.bfloat16)],
        "256x8192x128_fp16": lambda: [torch.randn(256, 8192, 128, dtype=torch.float16)],
        "test_3x17x1500_fp32": lambda: [torch.randn(3, 17, 1500)],
        "test_2x9x300_bf16": lambda: [torch.randn(2, 9, 300, dtype=torch.bfloat16)],
    }


def get_inputs():
    return [torch.randn(16, 4096, 4096)]


def get_init_inputs():
    return []
