"""Mean cross-entropy loss over the rows of a logits matrix: logits [R, V], targets int64 [R] in
[0, V); loss = mean_r(logsumexp(logits[r]) - logits[r, targets[r]]), an fp32 scalar.

Derived from NPUKernelBench level2 Loss/CrossEntropyLoss (reduction "mean", no weights, no ignore
index, no label smoothing). fp16/bf16 logits are upcast to fp32.

The Triton version is a plain first conversion: one program per row computing its loss with two
loops over the row in BLOCK-sized chunks (running max, then sum of exp(x - max)) into an fp32 buffer,
then a single-program kernel that averages the R row losses. It is numerically safe and correct for
any vocabulary size, but reads each row twice.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "loss", "op": "cross_entropy",
         "source": "NPUKernelBench level2/Loss/CrossEntropyLoss"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits.float(), targets)


@triton.jit
def row_loss_kernel(x_ptr, t_ptr, loss_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    cols = tl.arange(0, BLOCK)

    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    # max and sum in one pass (online softmax): the row is read once, s follows the running max
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # a lane that has seen only -inf (masked) keeps exp() finite: shift by 0 there
        m_shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_shift) + tl.exp(x - m_shift)
        m = m_new
    row_max = tl.max(m, axis=0)
    # rescale every lane to the row max
    s = tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max))
    lse = tl.log(tl.sum(s, axis=0)) + row_max

    target = tl.load(t_ptr + row)
    x_t = tl.load(x_row + target).to(tl.float32)
    tl.store(loss_ptr + row, lse - x_t)


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        logits = logits.contiguous()
        targets = targets.contiguous()
        n_rows, n_cols = logits.shape
        row_loss = torch.empty(n_rows, device=logits.device, dtype=torch.float32)
        out = torch.empty((), device=logits.device, dtype=torch.float32)
        row_loss_kernel[(n_rows,)](logits, targets, row_loss, n_cols, logits.stride(0), BLOCK=1024)
        mean_kernel[(1,)](row_loss, out, n_rows, BLOCK=1024)
        return out


def _case(rows, vocab, dtype):
    return [torch.randn(rows, vocab, dtype=dtype), torch.randint(0, vocab, (rows,), dtype=torch.int64)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "rows8192_vocab32000_fp32": lambda: _case(8192, 32000, torch.float32),
        "rows4096_vocab128256_bf16": lambda: _case(4096, 128256, torch.bfloat16),
        "rows16384_vocab50257_fp16": lambda: _case(16384, 50257, torch.float16),
        "test_rows37_vocab1000_fp32": lambda: _case(37, 1000, torch.float32),
        "test_rows13_vocab2050_bf16": lambda: _case(13, 2050, torch.bfloat16),
    }


def get_inputs():
    return _case(8192, 32000, torch.float32)


def get_init_inputs():
    return []
