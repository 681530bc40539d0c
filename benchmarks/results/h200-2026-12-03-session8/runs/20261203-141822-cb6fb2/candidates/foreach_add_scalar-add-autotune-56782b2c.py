"""Foreach add scalar: out_i = x_i + scalar for every tensor x_i of a list of tensors.

Derived from NPUKernelBench level2 Foreach/ForeachAddScalar (torch._foreach_add(x, scalar)
on a tensor list). The tensors are the forward's inputs (forward(*xs), shapes differ
from one tensor to the next), the scalar is a constructor argument; the result is a list.

The Triton version is the plain first conversion: one launch of a 1-D elementwise
kernel per tensor (BLOCK=1024 elements per program, masked tail, fp32 add, one store).
Correct for any list; it pays one launch per tensor, which a multi-tensor-apply kernel
(one launch covering every tensor) avoids.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "foreach", "op": "add_scalar", "source": "NPUKernelBench level2/Foreach/ForeachAddScalar"}


class Model(nn.Module):
    def __init__(self, scalar):
        super().__init__()
        self.scalar = scalar

    def forward(self, *xs):
        return list(torch._foreach_add(list(xs), self.scalar))


def _autotune_bench(kernel_call, quantiles):
    """Triton's benchmarker on a device; the interpreter has none, so there each config just runs once."""
    if triton.knobs.runtime.interpret:
        kernel_call()
        return [0.0, 0.0, 0.0]
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, quantiles=quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=8),
        triton.Config({"BLOCK": 2048}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
        triton.Config({"BLOCK": 2048}, num_warps=16),
        triton.Config({"BLOCK": 4096}, num_warps=4),
    ],
    key=["n"],
    do_bench=_autotune_bench,
)
@triton.jit
def add_scalar_kernel(x_ptr, out_ptr, scalar, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + scalar).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scalar):
        super().__init__()
        self.scalar = scalar

    def forward(self, *xs):
        outs = []
        for x in xs:
            x = x.contiguous()
            out = torch.empty_like(x)
            n = x.numel()
            add_scalar_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, self.scalar, n)
            outs.append(out)
        return outs


def _tensors(shapes, dtype):
    return [torch.randn(s, dtype=dtype) for s in shapes]


# 8 large tensors of different shapes (about 1.2 GB of fp32 in all).
_LARGE = [(4096, 4096), (8192, 4096), (11008, 4096), (4096, 11008), (32000, 4096),
          (1024, 8192), (4096,), (6144, 4096)]
# 64 mid-sized tensors, as an optimizer's parameter list (about 900 MB of bf16 in all).
_MANY = [(1024 + 64 * i, 2048 + 128 * (i % 5)) for i in range(64)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "large8_fp32": lambda: _tensors(_LARGE, torch.float32),
        "many64_bf16": lambda: _tensors(_MANY, torch.bfloat16),
        "test_5tensors_fp32": lambda: _tensors([(37, 41), (129,), (3, 5, 67), (1000,), (17, 2)], torch.float32),
    }


def get_inputs():
    return _tensors(_LARGE, torch.float32)


def get_init_inputs():
    return [1.25]
