"""Matrix multiply C = A @ B for fp16/bf16 inputs, fp32 accumulation, output in the input dtype.

Derived from NPUKernelBench level3 GMM/BasicMatmul.

The Triton version is a plain first tiled kernel: a 2-D grid of 64x64 output tiles in row-major
program order (no grouping/swizzle for L2 reuse), a K loop in steps of 32 with masked loads, an fp32
accumulator fed by tl.dot, and default num_warps/num_stages. It is correct for any M, N, K; the tile
sizes, tile order and pipelining are left untuned.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 3, "category": "matmul", "op": "basic", "source": "NPUKernelBench level3/GMM/BasicMatmul"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


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
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
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
        M, K = a.shape
        _, N = b.shape
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
        matmul_kernel[grid](a, b, c, M, N, K,
                            a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1))
        return c


def _pair(m, n, k, dtype):
    return [torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "m4096_n4096_k4096_fp16": lambda: _pair(4096, 4096, 4096, torch.float16),
        "m8192_n8192_k8192_bf16": lambda: _pair(8192, 8192, 8192, torch.bfloat16),
        "m16384_n2048_k4096_fp16": lambda: _pair(16384, 2048, 4096, torch.float16),
        # bf16 only on the device: the interpreter's bf16 tl.dot gives garbage.
        "test_m70_n60_k50_fp16": lambda: _pair(70, 60, 50, torch.float16),
        "test_m33_n130_k100_fp16": lambda: _pair(33, 130, 100, torch.float16),
    }


def get_inputs():
    return _pair(4096, 4096, 4096, torch.float16)


def get_init_inputs():
    return []
