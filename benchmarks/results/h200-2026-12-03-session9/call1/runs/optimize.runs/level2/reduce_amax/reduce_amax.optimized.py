"""Max over dim 1 of a 2-D tensor: x [M, N] -> [M] = torch.amax(x, dim=1), in the input dtype.

Derived from the ReduceMaxD core of NPUKernelBench level2 Reduce/SelectReduceMaxDSubExpReduceSumDRealDiv
(a row max, as also in mindspore-ai/akg reduction_amax cases).

The Triton version is a plain first conversion: one program per row, looping over the row in chunks
of BLOCK = min(1024, next_pow2(N)) with a running elementwise maximum (masked lanes = -inf), then one
tl.max. Correct for any N; very long rows give few programs, short rows little work per program.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "reduce", "op": "amax",
         "source": "NPUKernelBench level2/Reduce/SelectReduceMaxDSubExpReduceSumDRealDiv"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.amax(x, dim=1)


def _autotune_bench(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=8),
        triton.Config({"BLOCK": 2048}, num_warps=16),
    ],
    key=["n_cols"],
    do_bench=_autotune_bench,
)
@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        m = tl.maximum(m, tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32))
    tl.store(out_ptr + row, tl.max(m, axis=0).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        row_max_kernel[lambda meta: (n_rows,)](x, out, n_cols, x.stride(0))
        return out


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "16384x16384_fp32": lambda: [torch.randn(16384, 16384)],
        "65536x4096_fp16": lambda: [torch.randn(65536, 4096, dtype=torch.float16)],
        "1024x262144_bf16": lambda: [torch.randn(1024, 262144, dtype=torch.bfloat16)],
        "test_37x1500_fp32": lambda: [torch.randn(37, 1500)],
        "test_19x333_bf16": lambda: [torch.randn(19, 333, dtype=torch.bfloat16)],
    }


def get_inputs():
    return [torch.randn(16384, 16384)]


def get_init_inputs():
    return []
