"""Upper triangle with a diagonal offset: out = torch.triu(x, diagonal) for x of shape [B, M, N].

Derived from NPUKernelBench level2 Mask/Triu; diagonal is an int input (k > 0 drops k
more diagonals above the main one, k < 0 keeps k more below it).

The Triton version is the plain first conversion: a 2-D grid of (matrix row, BLOCK=1024
columns), each program loading its chunk of the row with a masked tail and storing
x where column - row >= diagonal and 0 elsewhere; correct for any shape. It loads the
whole input, including the lower part it then zeroes, which a tuned kernel can skip.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "mask", "op": "triu", "source": "NPUKernelBench level2/Mask/Triu"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, diagonal):
        return torch.triu(x, diagonal)


@triton.jit
def triu_kernel(x_ptr, out_ptr, M, N, diagonal, BLOCK: tl.constexpr):
    r = tl.program_id(0)  # row over all B * M matrix rows
    row = r % M
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + r * N + cols, mask=mask, other=0.0)
    y = tl.where(cols - row >= diagonal, x, tl.zeros_like(x))
    tl.store(out_ptr + r * N + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, diagonal):
        x = x.contiguous()
        M, N = x.shape[-2], x.shape[-1]
        rows = x.numel() // N
        out = torch.empty_like(x)
        BLOCK = 1024
        triu_kernel[(rows, triton.cdiv(N, BLOCK))](x, out, M, N, diagonal, BLOCK=BLOCK)
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "b16_m4096_n4096_k1_fp32": lambda: [torch.randn(16, 4096, 4096), 1],
        "b64_m2048_n2048_km64_fp16": lambda: [torch.randn(64, 2048, 2048, dtype=torch.float16), -64],
        "test_b3_m37_n45_k2_fp32": lambda: [torch.randn(3, 37, 45), 2],
        "test_b2_m40_n33_km5_fp32": lambda: [torch.randn(2, 40, 33), -5],
    }


def get_inputs():
    return [torch.randn(16, 4096, 4096), 1]


def get_init_inputs():
    return []
