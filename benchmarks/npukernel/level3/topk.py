"""Top-k along the last dim: x [rows, n] -> (values [rows, k], indices int64 [rows, k]), values in
descending order, as torch.topk(x, k, dim=-1) (largest, sorted). Small k (8).

Derived from NPUKernelBench level3 Sort/TopKV3 (also MultiKernelBench npukernelbench_level1 9_top_k).
The inputs are a random permutation of distinct values in every row, so the indices are unambiguous.

The Triton version is a plain first conversion: one program per row that loads the whole row
(BLOCK = next_pow2(n), masked lanes = -inf) and runs k rounds of "max with index, store, mask that
element out". It is correct for any n that fits one block; the k full-row reductions per row leave
headroom (e.g. a bitonic tl.sort/tl.topk or a partial sort).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 3, "category": "sort", "op": "topk", "source": "NPUKernelBench level3/Sort/TopKV3"}


class Model(nn.Module):
    def __init__(self, k=8):
        super().__init__()
        self.k = k

    def forward(self, x):
        values, indices = torch.topk(x, self.k, dim=-1)
        return values, indices


@triton.jit
def topk_kernel(x_ptr, val_ptr, idx_ptr, n_cols, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf")).to(tl.float32)
    for i in tl.static_range(K):
        m, idx = tl.max(x, axis=0, return_indices=True)
        tl.store(val_ptr + row * K + i, m.to(val_ptr.dtype.element_ty))
        tl.store(idx_ptr + row * K + i, idx.to(tl.int64))
        x = tl.where(cols == idx, float("-inf"), x)


class ModelNew(nn.Module):
    def __init__(self, k=8):
        super().__init__()
        self.k = k

    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        values = torch.empty((rows, self.k), device=x.device, dtype=x.dtype)
        indices = torch.empty((rows, self.k), device=x.device, dtype=torch.int64)
        topk_kernel[(rows,)](x, values, indices, n, K=self.k, BLOCK=triton.next_power_of_2(n))
        return values, indices


def _distinct(rows, n, dtype):
    # each row a random permutation of 0..n-1, centred and scaled; exact in fp16 for n <= 2048
    perm = torch.rand(rows, n).argsort(dim=-1).float()
    scale = 1.0 if dtype == torch.float16 else 1.0 / n
    return [((perm - n // 2) * scale).to(dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn. All use k = 8.
    return {
        "rows16384_n4096_fp32": lambda: _distinct(16384, 4096, torch.float32),
        "rows65536_n2048_fp16": lambda: _distinct(65536, 2048, torch.float16),
        "rows262144_n256_fp32": lambda: _distinct(262144, 256, torch.float32),
        "test_rows37_n300_fp32": lambda: _distinct(37, 300, torch.float32),
        "test_rows13_n1000_fp16": lambda: _distinct(13, 1000, torch.float16),
    }


def get_inputs():
    return _distinct(16384, 4096, torch.float32)


def get_init_inputs():
    return [8]
