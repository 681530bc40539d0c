"""One AdamW step, functional: given param, grad, exp_avg, exp_avg_sq (fp32) and the step number,
return the new (param, exp_avg, exp_avg_sq), as torch.optim.AdamW (amsgrad=False, maximize=False):
    param *= 1 - lr * weight_decay
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2
    param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)
lr, betas, eps and weight_decay are constructor arguments; step is a Python-number input.

Derived from NPUKernelBench level2 Optim/ApplyAdamWV2 (without max_grad_norm; returns new tensors
instead of updating in place).

The Triton version is a plain first conversion: one elementwise kernel on a 1-D grid with a BLOCK of
1024, reading the four tensors once and writing the three results, with the bias corrections computed
on the host as Python floats. It is already one fused pass; the headroom is in block size and launch
configuration.
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

ENTRY = {"level": 2, "category": "optim", "op": "adamw", "source": "NPUKernelBench level2/Optim/ApplyAdamWV2"}


class Model(nn.Module):
    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = lr, beta1, beta2, eps, weight_decay

    def forward(self, param, grad, exp_avg, exp_avg_sq, step):
        param = param * (1 - self.lr * self.weight_decay)
        exp_avg = exp_avg * self.beta1 + grad * (1 - self.beta1)
        exp_avg_sq = exp_avg_sq * self.beta2 + grad * grad * (1 - self.beta2)
        step_size = self.lr / (1 - self.beta1 ** step)
        denom = exp_avg_sq.sqrt() / math.sqrt(1 - self.beta2 ** step) + self.eps
        return param - step_size * exp_avg / denom, exp_avg, exp_avg_sq


@triton.jit
def adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, p_out, m_out, v_out, n,
                 lr, beta1, beta2, eps, weight_decay, step_size, bc2_sqrt, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    p = p * (1 - lr * weight_decay)
    m = m * beta1 + g * (1 - beta1)
    v = v * beta2 + g * g * (1 - beta2)
    denom = tl.sqrt(v) / bc2_sqrt + eps
    tl.store(p_out + offs, p - step_size * m / denom, mask=mask)
    tl.store(m_out + offs, m, mask=mask)
    tl.store(v_out + offs, v, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = lr, beta1, beta2, eps, weight_decay

    def forward(self, param, grad, exp_avg, exp_avg_sq, step):
        p, g, m, v = (t.contiguous() for t in (param, grad, exp_avg, exp_avg_sq))
        p_new, m_new, v_new = torch.empty_like(p), torch.empty_like(m), torch.empty_like(v)
        step_size = self.lr / (1 - self.beta1 ** step)
        bc2_sqrt = math.sqrt(1 - self.beta2 ** step)
        n = p.numel()
        BLOCK = 1024
        adamw_kernel[(triton.cdiv(n, BLOCK),)](p, g, m, v, p_new, m_new, v_new, n,
                                               self.lr, self.beta1, self.beta2, self.eps,
                                               self.weight_decay, step_size, bc2_sqrt, BLOCK=BLOCK)
        return p_new, m_new, v_new


def _case(shape, step):
    return [torch.randn(*shape), torch.randn(*shape), torch.randn(*shape) * 0.1,
            torch.rand(*shape) * 0.01, step]


def get_input_groups():
    # Values are functions so that only the selected groups are drawn.
    return {
        "params8192x8192_step10_fp32": lambda: _case((8192, 8192), 10),
        "params4096x11008_step1000_fp32": lambda: _case((4096, 11008), 1000),
        "params32000x4096_step3_fp32": lambda: _case((32000, 4096), 3),
        "test_params37x301_step10_fp32": lambda: _case((37, 301), 10),
        "test_params1000_step1_fp32": lambda: _case((1000,), 1),
    }


def get_inputs():
    return _case((8192, 8192), 10)


def get_init_inputs():
    return [1e-3, 0.9, 0.999, 1e-8, 1e-2]
