"""Batched matrix multiply C[b] = A[b] @ B[b] (torch.bmm) for fp16/bf16 inputs, fp32 accumulation.

Derived from NPUKernelBench level3 GMM/BatchedMatmul (also MultiKernelBench npukernelbench_level3
1_batch_matmul).

The Triton version is a plain first tiled kernel: a 3-D grid (M tiles, N tiles, batch) of 64x64
output tiles in row-major order, a K loop in steps of 32 with masked loads and an fp32 tl.dot
accumulator, default num_warps/num_stages. Correct for any shape; tiles, tile order and pipelining
are left untuned.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 3, "category": "matmul", "op": "batched", "source": "NPUKernelBench level3/GMM/BatchedMatmul"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def _autotune_bench(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=4),
    ],
    key=["M", "N", "K"],
    do_bench=_autotune_bench,
)
@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
               stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
               stride_cb, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    batch = tl.program_id(2).to(tl.int64)
    a_ptr += batch * stride_ab
    b_ptr += batch * stride_bb
    c_ptr += batch * stride_cb
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a_mask = (offs_m[:, None] < M) & (k + offs_k[None, :] < K)
        b_mask = (k + offs_k[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k[None, :]) * stride_ak,
                    mask=a_mask, other=0.0)
        b = tl.load(b_ptr + (k + offs_k[:, None]) * stride_bk + offs_n[None, :] * stride_bn,
                    mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=c_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        batch, M, K = a.shape
        N = b.shape[2]
        c = torch.empty((batch, M, N), device=a.device, dtype=a.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]), batch)
        bmm_kernel[grid](a, b, c, M, N, K,
                         a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1), b.stride(2),
                         c.stride(0), c.stride(1), c.stride(2))
        return c


def _pair(batch, m, n, k, dtype):
    return [torch.randn(batch, m, k, dtype=dtype), torch.randn(batch, k, n, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "b32_m1024_n1024_k1024_fp16": lambda: _pair(32, 1024, 1024, 1024, torch.float16),
        "b16_m2048_n2048_k512_bf16": lambda: _pair(16, 2048, 2048, 512, torch.bfloat16),
        "b256_m512_n128_k512_fp16": lambda: _pair(256, 512, 128, 512, torch.float16),
        # bf16 only on the device: the interpreter's bf16 tl.dot gives garbage.
        "test_b3_m33_n40_k50_fp16": lambda: _pair(3, 33, 40, 50, torch.float16),
    }


def get_inputs():
    return _pair(32, 1024, 1024, 1024, torch.float16)


def get_init_inputs():
    return []
