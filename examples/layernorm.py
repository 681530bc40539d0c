"""Layer norm over the last dim of a 2-D tensor, with learned weight and bias:
out = (x - mean) / sqrt(var + eps) * weight + bias  (biased variance, eps=1e-5).

The Triton version is a straightforward first conversion: one program per
row, looping over the columns in BLOCK-sized chunks in three passes (mean,
variance around the mean, then normalize, scale, shift and write). It is
correct for any row length (masked tail), but reads every row three times from
memory; a one-pass kernel that keeps the row in registers avoids that.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-5


class Model(nn.Module):
    def __init__(self, normalized_dim):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(normalized_dim))
        self.bias = nn.Parameter(0.1 * torch.randn(normalized_dim))

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), self.weight, self.bias, EPS)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_out, eps,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK)

    # pass 1: mean
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols

    # pass 2: variance
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

    # pass 3: normalize, scale, shift, write
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(out_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_dim):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(normalized_dim))
        self.bias = nn.Parameter(0.1 * torch.randn(normalized_dim))

    def forward(self, x):
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        BLOCK = 256
        layernorm_kernel[(n_rows,)](x, self.weight, self.bias, out, n_cols,
                                    x.stride(0), out.stride(0), EPS, BLOCK=BLOCK)
        return out


# The weight/bias size comes from get_init_inputs() and is shared by every
# input group, so all groups have the same row length; 8000 is not a multiple
# of BLOCK, so the test group exercises the masked tail.
N_COLS = 8000


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "rows8192_cols8000": lambda: [torch.randn(8192, N_COLS)],
        "rows32768_cols8000": lambda: [torch.randn(32768, N_COLS)],
        "test_rows8_cols8000": lambda: [torch.randn(8, N_COLS)],
    }


def get_inputs():
    return [torch.randn(8192, N_COLS)]


def get_init_inputs():
    return [N_COLS]
