"""Matrix-vector product y = A @ x for a large A [M, K] and x [K], fp16 or fp32, fp32 accumulation,
output in the input dtype.

Derived from NPUKernelBench level3 GMM/Gemv (alpha = 1, beta = 0, no transpose).

The Triton version is a plain first conversion: one program per row of A, looping over the row in
BLOCK = 1024 chunks with an fp32 vector accumulator of A[row] * x, then one tl.sum. It is correct for
any shape and reads A once (the operation is memory-bound); each program reads x again and works on a
single row, which leaves headroom in tiling and vectorization.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 3, "category": "matmul", "op": "gemv", "source": "NPUKernelBench level3/GMM/Gemv"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.mv(a, x)


@triton.jit
def gemv_kernel(a_ptr, x_ptr, y_ptr, K, stride_am, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    a_row = a_ptr + row.to(tl.int64) * stride_am
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, K, BLOCK):
        mask = start + cols < K
        a = tl.load(a_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        acc += a * x
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        a = a.contiguous()
        x = x.contiguous()
        M, K = a.shape
        y = torch.empty(M, device=a.device, dtype=a.dtype)
        gemv_kernel[(M,)](a, x, y, K, a.stride(0), BLOCK=1024)
        return y


def _case(m, k, dtype):
    return [torch.randn(m, k, dtype=dtype), torch.randn(k, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "m32768_k8192_fp16": lambda: _case(32768, 8192, torch.float16),
        "m32768_k8192_fp32": lambda: _case(32768, 8192, torch.float32),  # K kept moderate for fp32 1e-4
        "m4096_k65536_fp16": lambda: _case(4096, 65536, torch.float16),
        "test_m37_k1300_fp32": lambda: _case(37, 1300, torch.float32),
        "test_m29_k517_fp16": lambda: _case(29, 517, torch.float16),
    }


def get_inputs():
    return _case(32768, 8192, torch.float16)


def get_init_inputs():
    return []
