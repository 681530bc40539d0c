"""Mean squared error loss: mean((input - target)^2) over all elements, a scalar of the input dtype.

Derived from NPUKernelBench level2 Loss/MseLoss (reduction "mean"). The sum is accumulated in fp32.

The Triton version is a plain first conversion of a two-stage reduction: a 1-D grid of programs,
each summing the squared differences of one BLOCK of 1024 elements into an fp32 partial, then a
single-program kernel that sums the partials and divides by the element count. It is deterministic
and correct for any size; the one-block-per-program first stage and the large partial buffer leave
headroom.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "loss", "op": "mse", "source": "NPUKernelBench level2/Loss/MseLoss"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, input, target):
        return F.mse_loss(input, target)


@triton.jit
def sq_diff_partial_kernel(a_ptr, b_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = a - b
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


@triton.jit
def sq_diff_partial_kernel_i32(a_ptr, b_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = a - b
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


@triton.jit
def mean_kernel(x_ptr, out_ptr, n_partials, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_partials, BLOCK):
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n_partials, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n).to(out_ptr.dtype.element_ty))


def _offsets_fit_int32(*tensors):
    """Every element offset of these tensors fits in int32, with room for a block past the end."""
    return all(t.storage_offset() + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride())) < 2**30
               for t in tensors)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, input, target):
        a = input.contiguous().view(-1)
        b = target.contiguous().view(-1)
        n = a.numel()
        BLOCK = 1024
        n_partials = triton.cdiv(n, BLOCK)
        partials = torch.empty(n_partials, device=a.device, dtype=torch.float32)
        out = torch.empty((), device=a.device, dtype=input.dtype)
        # int32 offsets when every tensor is small enough; int64 otherwise
        if _offsets_fit_int32(a, b, partials):
            sq_diff_partial_kernel_i32[(n_partials,)](a, b, partials, n, BLOCK=BLOCK)
        else:
            sq_diff_partial_kernel[(n_partials,)](a, b, partials, n, BLOCK=BLOCK)
        mean_kernel[(1,)](partials, out, n_partials, n, BLOCK=BLOCK)
        return out


def _case(shape, dtype):
    return [torch.randn(*shape, dtype=dtype), torch.randn(*shape, dtype=dtype)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "8192x8192_fp32": lambda: _case((8192, 8192), torch.float32),
        "16384x16384_bf16": lambda: _case((16384, 16384), torch.bfloat16),
        "64x4096x1024_fp16": lambda: _case((64, 4096, 1024), torch.float16),
        "test_37x301_fp32": lambda: _case((37, 301), torch.float32),
        "test_5x7x111_fp16": lambda: _case((5, 7, 111), torch.float16),
    }


def get_inputs():
    return _case((8192, 8192), torch.float32)


def get_init_inputs():
    return []
