"""Index add along dim 0, functional: out = x.index_add(0, index, src).

out[index[i], :] += src[i, :] for every i, on a copy of x. Derived from NPUKernelBench
level1 Index/ScatterList (scatter of update rows into destination tensors; this entry
uses the accumulating index_add form). index is drawn in [0, N), valid by construction,
with repeats (M = 2N rows of src), so rows collide.

The Triton version is the plain first conversion: one kernel copies x into out (1-D
grid, BLOCK=1024), a second one adds each src row into its destination row with fp32
tl.atomic_add (2-D grid of (src row, BLOCK=1024 columns)). The atomics make the order
of the few additions per element run-dependent; with randn data and ~3 terms per
element the difference is a few ulps, far inside the fp32 tolerance of 1e-4.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 1, "category": "index", "op": "scatter_add", "source": "NPUKernelBench level1/Index/ScatterList"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, index, src):
        return x.index_add(0, index, src)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def index_add_kernel(out_ptr, idx_ptr, src_ptr, D, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    dst = tl.load(idx_ptr + i)
    vals = tl.load(src_ptr + i * D + cols, mask=mask)
    tl.atomic_add(out_ptr + dst * D + cols, vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, index, src):
        x, index, src = x.contiguous(), index.contiguous(), src.contiguous()
        D = x.shape[1]
        M = index.shape[0]
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        copy_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=4)
        index_add_kernel[(M, triton.cdiv(D, BLOCK))](out, index, src, D, BLOCK=BLOCK)
        return out


def _case(n, d, m):
    return [torch.randn(n, d), torch.randint(0, n, (m,), dtype=torch.int64), torch.randn(m, d)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "n65536_d1024_m131072_fp32": lambda: _case(65536, 1024, 131072),
        "n16384_d4096_m32768_fp32": lambda: _case(16384, 4096, 32768),
        "test_n41_d300_m82_fp32": lambda: _case(41, 300, 82),
    }


def get_inputs():
    return _case(65536, 1024, 131072)


def get_init_inputs():
    return []
