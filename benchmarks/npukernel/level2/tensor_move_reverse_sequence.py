"""Reverse sequence: for each batch b, reverse x[b, :L_b] along time, keep x[b, L_b:].

out[b, t] = x[b, L_b - 1 - t] for t < L_b, else x[b, t] (tf.reverse_sequence with
seq_dim=1, batch_dim=0), x of shape [B, T, D], L = seq_lengths (int64) drawn in [1, T]
as NPUKernelBench does. Derived from NPUKernelBench level2 TensorMove/ReverseSequence;
the reference is a vectorized torch.gather form of NPUKernelBench's per-batch loop.

The Triton version is the plain first conversion of a row permutation: a 2-D grid of
(output row over B * T, BLOCK=1024 features), each program reading L_b, picking its
source time step and copying that row chunk with a masked tail; correct for any shape,
memory-bound, with the usual tuning left to find.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "tensor_move", "op": "reverse_sequence",
         "source": "NPUKernelBench level2/TensorMove/ReverseSequence"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, seq_lengths):
        B, T, D = x.shape
        t = torch.arange(T, device=x.device).unsqueeze(0)
        lens = seq_lengths.unsqueeze(1)
        src = torch.where(t < lens, lens - 1 - t, t)
        return torch.gather(x, 1, src.unsqueeze(2).expand(B, T, D))


@triton.jit
def reverse_sequence_kernel(x_ptr, len_ptr, out_ptr, T, D, BLOCK: tl.constexpr):
    r = tl.program_id(0)  # output row over B * T
    b = r // T
    t = r % T
    seq_len = tl.load(len_ptr + b)
    src_t = tl.where(t < seq_len, seq_len - 1 - t, t)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    v = tl.load(x_ptr + (b * T + src_t) * D + cols, mask=mask)
    tl.store(out_ptr + r * D + cols, v, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, seq_lengths):
        x, seq_lengths = x.contiguous(), seq_lengths.contiguous()
        B, T, D = x.shape
        out = torch.empty_like(x)
        BLOCK = 1024
        reverse_sequence_kernel[(B * T, triton.cdiv(D, BLOCK))](x, seq_lengths, out, T, D, BLOCK=BLOCK)
        return out


def _case(b, t, d, dtype):
    return [torch.randn(b, t, d, dtype=dtype), torch.randint(1, t + 1, (b,), dtype=torch.int64)]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "b64_t4096_d1024_fp32": lambda: _case(64, 4096, 1024, torch.float32),
        "b128_t2048_d1024_fp16": lambda: _case(128, 2048, 1024, torch.float16),
        "test_b5_t13_d37_fp32": lambda: _case(5, 13, 37, torch.float32),
    }


def get_inputs():
    return _case(64, 4096, 1024, torch.float32)


def get_init_inputs():
    return []
