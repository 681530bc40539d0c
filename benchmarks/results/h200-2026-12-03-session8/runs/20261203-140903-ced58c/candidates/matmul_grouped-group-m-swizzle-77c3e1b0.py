"""Grouped matmul (MoE experts): G independent products of different M with shared K and N.
Inputs: A_cat [sum M_g, K] (the groups' rows stacked), B [G, K, N], offsets int64 [G + 1] (offsets[0]
= 0, offsets[g + 1] - offsets[g] = M_g >= 1); output [sum M_g, N] with rows offsets[g]:offsets[g+1]
= A_cat[offsets[g]:offsets[g+1]] @ B[g]. fp16/bf16 inputs, fp32 accumulation.

Derived from NPUKernelBench level3 GMM/GroupedMatmulSliceM (also MultiKernelBench
npukernelbench_level3 2_grouped_matmul).

The Triton version is the plain first conversion: the offsets are read on the host and a Python loop
launches one plain tiled matmul kernel (64x64x32 tiles, fp32 tl.dot accumulator) per group on views
of A_cat, B and the output. It is correct for any group sizes; the G launches, the host sync and the
ragged last tiles of each group are the headroom (a single launch over all groups' tiles avoids them).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 3, "category": "matmul", "op": "grouped",
         "source": "NPUKernelBench level3/GMM/GroupedMatmulSliceM"}


def _grouped_bytes(inputs):
    a_cat, b, offsets = inputs
    out = a_cat.shape[0] * b.shape[2] * a_cat.element_size()
    return sum(t.numel() * t.element_size() for t in inputs) + out


def _grouped_flops(inputs):
    a_cat, b, _ = inputs
    return 2 * a_cat.shape[0] * a_cat.shape[1] * b.shape[2]  # sum over g of 2 M_g K N


# What the counters would find, from the shapes alone: the reference reads the offsets' values,
# which `meta` tensors do not have.
ROOFLINE = {"bytes": _grouped_bytes, "flops": _grouped_flops}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a_cat, b, offsets):
        bounds = offsets.tolist()
        return torch.cat([a_cat[bounds[g]:bounds[g + 1]] @ b[g] for g in range(b.shape[0])], dim=0)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
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

    def forward(self, a_cat, b, offsets):
        total_m, K = a_cat.shape
        G, _, N = b.shape
        c = torch.empty((total_m, N), device=a_cat.device, dtype=a_cat.dtype)
        bounds = offsets.tolist()
        BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
        for g in range(G):
            a_g, b_g, c_g = a_cat[bounds[g]:bounds[g + 1]], b[g], c[bounds[g]:bounds[g + 1]]
            M = a_g.shape[0]
            grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
            matmul_kernel[grid](a_g, b_g, c_g, M, N, K,
                                a_g.stride(0), a_g.stride(1), b_g.stride(0), b_g.stride(1),
                                c_g.stride(0), c_g.stride(1),
                                BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8)
        return c


def _case(groups, m_low, m_high, n, k, dtype):
    # The offsets are host values (read with .tolist()): drawn on the CPU even where the other inputs
    # are drawn on `meta`, so the work of a device-sized group is counted without running it.
    sizes = torch.randint(m_low, m_high + 1, (groups,), dtype=torch.int64, device="cpu")
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64, device="cpu"), torch.cumsum(sizes, 0)])
    a_cat = torch.randn(int(offsets[-1]), k, dtype=dtype)
    return [a_cat, torch.randn(groups, k, n, dtype=dtype), offsets]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn. M_g are drawn per seed.
    return {
        "g8_m256to2048_n4096_k2048_fp16": lambda: _case(8, 256, 2048, 4096, 2048, torch.float16),
        "g64_m16to512_n2048_k1024_bf16": lambda: _case(64, 16, 512, 2048, 1024, torch.bfloat16),
        "g16_m512to4096_n1536_k4096_fp16": lambda: _case(16, 512, 4096, 1536, 4096, torch.float16),
        # bf16 only on the device: the interpreter's bf16 tl.dot gives garbage.
        "test_g3_m1to70_n40_k48_fp16": lambda: _case(3, 1, 70, 40, 48, torch.float16),
    }


def get_inputs():
    return _case(8, 256, 2048, 4096, 2048, torch.float16)


def get_init_inputs():
    return []
