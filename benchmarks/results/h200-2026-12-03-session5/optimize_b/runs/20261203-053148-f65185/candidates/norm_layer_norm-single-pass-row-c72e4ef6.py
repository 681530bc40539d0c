"""Layer norm over the last dim with weight and bias: y = (x - mean) / sqrt(var + eps) * w + b.

Derived from NPUKernelBench level2 Norm/LayerNormV4. fp16/bf16 inputs are upcast to fp32 for the
statistics and the affine step, and the result is cast back to the input dtype.

The Triton version is a plain first conversion in the style of the Triton tutorial: one program per
row and three loops over the row in BLOCK-sized chunks (sum for the mean, sum of squared deviations
for the variance, then normalize and write), all in fp32. It is numerically safe for any row length,
but reads each row three times.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "norm", "op": "layer_norm", "source": "NPUKernelBench level2/Norm/LayerNormV4"}


class Model(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x, weight, bias):
        y = F.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), self.eps)
        return y.to(x.dtype)


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_out, eps,
                      BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK)

    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols

    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(out_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_kernel_single_block(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_out, eps,
                                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK)

    acc = tl.zeros([BLOCK], tl.float32)
    start = 0
    mask = start + cols < n_cols
    x_row_tile = tl.load(x_row + start + cols, mask=mask, other=0.0)
    acc += x_row_tile.to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols

    acc = tl.zeros([BLOCK], tl.float32)
    x = x_row_tile.to(tl.float32)
    d = tl.where(mask, x - mean, 0.0)
    acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

    w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean) * rstd * w + b
    tl.store(out_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x, weight, bias):
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        # the row fits one block: one pass over memory; longer rows keep the multi-pass kernel
        if 0 < n_cols <= 16384:
            ROW_BLOCK = triton.next_power_of_2(n_cols)
            ROW_WARPS = 4 if ROW_BLOCK < 2048 else 8 if ROW_BLOCK < 8192 else 16
            layer_norm_kernel_single_block[(x2.shape[0],)](x2, weight.contiguous(), bias.contiguous(), out,
                                                           n_cols,
                                                           x2.stride(0), out.stride(0), self.eps,
                                                           BLOCK=ROW_BLOCK, num_warps=ROW_WARPS)
        else:
            layer_norm_kernel[(x2.shape[0],)](x2, weight.contiguous(), bias.contiguous(), out, n_cols,
                                              x2.stride(0), out.stride(0), self.eps, BLOCK=1024)
        return out.view(x.shape)


def _case(rows, cols, dtype):
    return [torch.randn(rows, cols, dtype=dtype), torch.randn(cols, dtype=dtype),
            torch.randn(cols, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "rows32768_cols4096_fp16": lambda: _case(32768, 4096, torch.float16),
        "rows16384_cols8192_fp32": lambda: _case(16384, 8192, torch.float32),
        "rows65536_cols2048_bf16": lambda: _case(65536, 2048, torch.bfloat16),
        "test_rows37_cols1300_fp32": lambda: _case(37, 1300, torch.float32),
        "test_rows19_cols333_fp16": lambda: _case(19, 333, torch.float16),
    }


def get_inputs():
    return _case(32768, 4096, torch.float16)


def get_init_inputs():
    return [1e-5]
