"""RMS norm over the last dim with a weight: y = x / sqrt(mean(x^2, -1) + eps) * weight.

Derived from NPUKernelBench level2 Norm/RmsNorm (x, gamma, epsilon). The statistics are computed in
fp32 and the result is cast back to the input dtype, as LLM implementations do.

The Triton version is a plain first conversion: one program per row, a first loop over the row in
BLOCK-sized chunks accumulating the sum of squares in fp32, and a second loop that normalizes,
scales by the weight and writes. It is correct for any row length, but reads each row twice.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "norm", "op": "rms_norm", "source": "NPUKernelBench level2/Norm/RmsNorm"}


class Model(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, weight):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * weight.float()).to(x.dtype)


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride_x, stride_out, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK)

    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + start + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_kernel_single_block(x_ptr, w_ptr, out_ptr, n_cols, stride_x, stride_out, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK)

    acc = tl.zeros([BLOCK], tl.float32)
    start = 0
    mask = start + cols < n_cols
    x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
    acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

    w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_row + start + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, weight):
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        weight = weight.contiguous()
        out = torch.empty_like(x2)
        # the row fits one block: one pass over memory; longer rows keep the multi-pass kernel
        if 0 < n_cols <= 16384:
            ROW_BLOCK = triton.next_power_of_2(n_cols)
            ROW_WARPS = 4 if ROW_BLOCK < 2048 else 8 if ROW_BLOCK < 8192 else 16
            rms_norm_kernel_single_block[(x2.shape[0],)](x2, weight, out, n_cols, x2.stride(0),
                                                         out.stride(0), self.eps,
                                                         BLOCK=ROW_BLOCK, num_warps=ROW_WARPS)
        else:
            rms_norm_kernel[(x2.shape[0],)](x2, weight, out, n_cols, x2.stride(0), out.stride(0), self.eps,
                                            BLOCK=1024)
        return out.view(x.shape)


def _case(rows, cols, dtype):
    return [torch.randn(rows, cols, dtype=dtype), torch.randn(cols, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "rows32768_cols4096_bf16": lambda: _case(32768, 4096, torch.bfloat16),
        "rows16384_cols8192_fp32": lambda: _case(16384, 8192, torch.float32),
        "rows65536_cols2048_fp16": lambda: _case(65536, 2048, torch.float16),
        "test_rows37_cols1300_fp32": lambda: _case(37, 1300, torch.float32),
        "test_rows19_cols333_bf16": lambda: _case(19, 333, torch.bfloat16),
    }


def get_inputs():
    return _case(32768, 4096, torch.bfloat16)


def get_init_inputs():
    return [1e-6]
