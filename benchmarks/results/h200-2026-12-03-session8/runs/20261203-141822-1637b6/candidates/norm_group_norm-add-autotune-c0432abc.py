"""Group norm with affine: x [N, C, H, W] split into G groups of C/G channels, each group normalized
over its (C/G)*H*W elements, then y = x_hat * weight[c] + bias[c].

Derived from NPUKernelBench level2 Norm/GroupNormSwish (the group norm without the Swish; also
MultiKernelBench npukernelbench_level1 11_group_norm). fp16/bf16 inputs use fp32 statistics.

The Triton version is a plain first conversion: one program per (sample, group); it loops over the
group's contiguous elements in BLOCK-sized chunks three times (mean, variance of deviations, then
normalize with the per-channel affine). Correct for any size, it launches only N*G programs and
reads each group three times.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "norm", "op": "group_norm", "source": "NPUKernelBench level2/Norm/GroupNormSwish"}


class Model(nn.Module):
    def __init__(self, num_groups=32, eps=1e-5):
        super().__init__()
        self.num_groups, self.eps = num_groups, eps

    def forward(self, x, weight, bias):
        y = F.group_norm(x.float(), self.num_groups, weight.float(), bias.float(), self.eps)
        return y.to(x.dtype)


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
    key=["group_size"],
    do_bench=_autotune_bench,
)
@triton.jit
def group_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, group_size, hw, channels_per_group, num_groups,
                      eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # = n * num_groups + g; the group's elements are contiguous
    g = pid % num_groups
    base = pid.to(tl.int64) * group_size
    offs = tl.arange(0, BLOCK)

    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, group_size, BLOCK):
        mask = start + offs < group_size
        acc += tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / group_size

    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, group_size, BLOCK):
        mask = start + offs < group_size
        x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / group_size + eps)

    for start in range(0, group_size, BLOCK):
        mask = start + offs < group_size
        x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
        c = g * channels_per_group + (start + offs) // hw
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(out_ptr + base + start + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_groups=32, eps=1e-5):
        super().__init__()
        self.num_groups, self.eps = num_groups, eps

    def forward(self, x, weight, bias):
        x = x.contiguous()
        n, c = x.shape[0], x.shape[1]
        hw = x.numel() // (n * c)
        cpg = c // self.num_groups
        out = torch.empty_like(x)
        group_norm_kernel[lambda meta: (n * self.num_groups,)](x, weight.contiguous(), bias.contiguous(), out,
                                                  cpg * hw, hw, cpg, self.num_groups, self.eps)
        return out


def _case(n, c, h, w, dtype):
    return [torch.randn(n, c, h, w, dtype=dtype), torch.randn(c, dtype=dtype), torch.randn(c, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn. All use num_groups=32.
    return {
        "n32_c512_64x64_fp32": lambda: _case(32, 512, 64, 64, torch.float32),
        "n16_c256_128x128_fp16": lambda: _case(16, 256, 128, 128, torch.float16),
        "n64_c1024_32x32_bf16": lambda: _case(64, 1024, 32, 32, torch.bfloat16),
        "test_n2_c64_7x9_fp32": lambda: _case(2, 64, 7, 9, torch.float32),
        "test_n1_c96_5x5_fp16": lambda: _case(1, 96, 5, 5, torch.float16),
    }


def get_inputs():
    return _case(32, 512, 64, 64, torch.float32)


def get_init_inputs():
    return [32, 1e-5]
