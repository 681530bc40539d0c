"""Fused residual add and RMS norm: y = x + residual; returns (rms_norm(y) * weight, y).

Derived from NPUKernelBench level2 Norm/AddRmsNorm (x1, x2, gamma -> y, x). The sum y is rounded to
the input dtype (as the unfused PyTorch code does), the statistics are computed in fp32, and the
normalized output is cast back to the input dtype.

The Triton version is a plain first conversion: one program per row; a first loop over the row in
BLOCK-sized chunks adds x and residual, writes y and accumulates the sum of squares in fp32; a second
loop reads y back, normalizes, scales and writes. Correct for any row length, it reads y twice.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "norm", "op": "add_rms_norm", "source": "NPUKernelBench level2/Norm/AddRmsNorm"}


class Model(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, residual, weight):
        y = x + residual
        yf = y.float()
        normed = yf * torch.rsqrt(yf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * weight.float()).to(x.dtype), y


def _autotune_bench(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=8),
        triton.Config({"BLOCK": 2048}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
        triton.Config({"BLOCK": 2048}, num_warps=16),
        triton.Config({"BLOCK": 4096}, num_warps=4),
    ],
    key=["n_cols"],
    do_bench=_autotune_bench,
)
@triton.jit
def add_rms_norm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    cols = tl.arange(0, BLOCK)

    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + base + start + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x + r).to(y_ptr.dtype.element_ty)  # the add rounded to the input dtype, as in torch
        tl.store(y_ptr + base + start + cols, y, mask=mask)
        yf = y.to(tl.float32)
        acc += yf * yf
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        y = tl.load(y_ptr + base + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + start + cols, (y * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, residual, weight):
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        r2 = residual.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        y = torch.empty_like(x2)
        add_rms_norm_kernel[lambda meta: (x2.shape[0],)](x2, r2, weight.contiguous(), out, y, n_cols, self.eps)
        return out.view(x.shape), y.view(x.shape)


def _case(rows, cols, dtype):
    return [torch.randn(rows, cols, dtype=dtype), torch.randn(rows, cols, dtype=dtype),
            torch.randn(cols, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "rows32768_cols4096_bf16": lambda: _case(32768, 4096, torch.bfloat16),
        "rows16384_cols8192_fp32": lambda: _case(16384, 8192, torch.float32),
        "rows65536_cols2048_fp16": lambda: _case(65536, 2048, torch.float16),
        # bf16 only on the device: the interpreter truncates fp32->bf16 casts (1 ulp, twice here).
        "test_rows37_cols1300_fp32": lambda: _case(37, 1300, torch.float32),
        "test_rows19_cols333_fp16": lambda: _case(19, 333, torch.float16),
    }


def get_inputs():
    return _case(32768, 4096, torch.bfloat16)


def get_init_inputs():
    return [1e-6]
