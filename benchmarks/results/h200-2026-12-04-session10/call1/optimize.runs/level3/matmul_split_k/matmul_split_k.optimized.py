"""Matrix multiply C = A @ B for tall-K shapes (small M and N, very long K), fp16/bf16 inputs, fp32
accumulation, output in the input dtype.

Derived from NPUKernelBench level3 GMM/SplitkMatmul, whose point is splitting K across programs.

The Triton version is the plain tiled kernel WITHOUT split-K: a 2-D grid of 64x64 output tiles, each
program walking the whole K range in steps of 32 with an fp32 tl.dot accumulator. It is correct and is
what a first conversion of a matmul looks like; for M = N = 512 it launches only 64 programs on a
132-SM GPU, so splitting K (partial tiles reduced afterwards) is the headroom.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 3, "category": "matmul", "op": "split_k", "source": "NPUKernelBench level3/GMM/SplitkMatmul"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        # The op accumulates in fp32 and rounds once; an fp32 output keeps cuBLAS from reducing partial
        # tiles in 16 bits (on its own that did not close the gap to this kernel: see `_pair`).
        if a.is_cuda:
            try:
                return torch.mm(a, b, out_dtype=torch.float32).to(a.dtype)
            except (TypeError, RuntimeError):  # a torch without mm's out_dtype: the same sum, slower
                pass
        return torch.mm(a.float(), b.float()).to(a.dtype)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, split_k):
    # grouped order: GROUP_M tile rows per column step, so A and B tiles are reused from L2
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # split K: program pid_k takes every split_k-th K step; partial tiles are added in fp32
    pid_k = tl.program_id(1)
    for k in range(pid_k * BLOCK_K, K, BLOCK_K * split_k):
        a_mask = (offs_m[:, None] < M) & (k + offs_k[None, :] < K)
        b_mask = (k + offs_k[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k[None, :]) * stride_ak,
                    mask=a_mask, other=0.0)
        b = tl.load(b_ptr + (k + offs_k[:, None]) * stride_bk + offs_n[None, :] * stride_bn,
                    mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.atomic_add(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc, mask=c_mask,
                  sem="relaxed")


def _core_count(device, fallback=132):
    """The device's cores: SMs on CUDA, AI cores on Ascend."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    if device.type == "npu":
        from triton.runtime import driver

        return driver.active.utils.get_device_properties(device.index or 0)["num_aicore"]
    return fallback  # the target's count, where the device cannot be asked (the interpreter, meta tensors)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64
        # split K (too few tiles for the device): 2 programs per SM in all, 4+ K steps each
        tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
        split_k = max(1, min(triton.cdiv(2 * _core_count(c.device), tiles), triton.cdiv(K, BLOCK_K) // 4))
        c_partial = torch.zeros_like(c, dtype=torch.float32)
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), split_k)
        matmul_kernel[grid](a, b, c_partial, M, N, K,
                            a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1),
                            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8, split_k=split_k,
                            num_stages=3, num_warps=8)
        c.copy_(c_partial)
        return c


def _pair(m, n, k, dtype):
    # Both operands scaled by 1/16 (exact: a power of two), so C has a standard deviation of sqrt(K)/256,
    # 0.7-1.4 here. Unscaled, |C| ~ sqrt(K) = 181-362 and two valid fp32 accumulations of these long sums
    # (cuBLAS's, with an fp32 output, and this kernel's) were up to 0.5 (fp16) and 4.0 (bf16) apart on
    # elements near zero on the H200, beyond the fixed atol of 1e-2; scaled, the same rounding is 256x
    # smaller, while one K step of 32 left out still moves C by ~0.02.
    return [torch.randn(m, k, dtype=dtype) / 16, torch.randn(k, n, dtype=dtype) / 16]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "m512_n512_k65536_fp16": lambda: _pair(512, 512, 65536, torch.float16),
        "m1024_n1024_k32768_bf16": lambda: _pair(1024, 1024, 32768, torch.bfloat16),
        "m256_n256_k131072_fp16": lambda: _pair(256, 256, 131072, torch.float16),
        # bf16 only on the device: the interpreter's bf16 tl.dot gives garbage.
        "test_m40_n36_k700_fp16": lambda: _pair(40, 36, 700, torch.float16),
    }


def get_inputs():
    return _pair(512, 512, 65536, torch.float16)


def get_init_inputs():
    return []
