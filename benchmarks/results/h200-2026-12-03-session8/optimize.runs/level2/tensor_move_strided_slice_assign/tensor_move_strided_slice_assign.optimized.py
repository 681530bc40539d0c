"""Strided slice assign, functional: out = x.clone(); out[:, begin:end:stride] = y.

x of shape [B, S, D], y of shape [B, len(range(begin, end, stride)), D]; begin, end and
stride are int inputs. Derived from NPUKernelBench level2 TensorMove/StridedSliceAssignV2
(whose reference also clones var_ref and assigns input_value into the strided slice).

The Triton version is the plain first conversion of the reference: one kernel copies
x into out (1-D grid, BLOCK=1024 elements, masked tail), a second writes each row of y
into its destination row begin + k * stride (2-D grid of (row of y, BLOCK=1024
features)); correct for any shape. The sliced rows are written twice, which one fused
pass that picks x or y per output row avoids.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "tensor_move", "op": "strided_slice_assign",
         "source": "NPUKernelBench level2/TensorMove/StridedSliceAssignV2"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y, begin, end, stride):
        out = x.clone()
        out[:, begin:end:stride] = y
        return out


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def assign_kernel(y_ptr, out_ptr, S, K, D, begin, stride, BLOCK: tl.constexpr):
    r = tl.program_id(0)  # row of y over B * K
    b = r // K
    k = r % K
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    v = tl.load(y_ptr + r * D + cols, mask=mask)
    tl.store(out_ptr + (b * S + begin + k * stride) * D + cols, v, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y, begin, end, stride):
        x, y = x.contiguous(), y.contiguous()
        B, S, D = x.shape
        K = y.shape[1]
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        copy_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=4)
        assign_kernel[(B * K, triton.cdiv(D, BLOCK))](y, out, S, K, D, begin, stride, BLOCK=BLOCK)
        return out


def _case(b, s, d, begin, end, stride, dtype):
    k = len(range(begin, end, stride))
    return [torch.randn(b, s, d, dtype=dtype), torch.randn(b, k, d, dtype=dtype), begin, end, stride]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "b256_s1536_d512_stride2_fp32": lambda: _case(256, 1536, 512, 0, 1536, 2, torch.float32),
        "b64_s4096_d1024_stride3_fp16": lambda: _case(64, 4096, 1024, 7, 4000, 3, torch.float16),
        "test_b3_s17_d37_stride3_fp32": lambda: _case(3, 17, 37, 1, 15, 3, torch.float32),
    }


def get_inputs():
    return _case(256, 1536, 512, 0, 1536, 2, torch.float32)


def get_init_inputs():
    return []
