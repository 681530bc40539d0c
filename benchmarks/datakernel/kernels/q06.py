"""Triton core of TPC-H Q6: one pass over lineitem, the four range filters and the product in
registers, one partial sum per block; the partials summed by torch (a fixed order: deterministic)."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def q06_kernel(ship, discount, quantity, price, partial, n, date, end, low, high, max_quantity, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    d = tl.load(ship + offs, mask=inside, other=0)
    disc = tl.load(discount + offs, mask=inside, other=0.0)
    qty = tl.load(quantity + offs, mask=inside, other=0.0)
    p = tl.load(price + offs, mask=inside, other=0.0)
    keep = inside & (d >= date) & (d < end) & (disc >= low) & (disc <= high) & (qty < max_quantity)
    tl.store(partial + pid, tl.sum(tl.where(keep, p * disc, 0.0), axis=0))


def core(t, s):
    n = t["l_shipdate"].numel()
    blocks = max(triton.cdiv(n, BLOCK), 1)
    partial = torch.empty(blocks, dtype=torch.float64, device=t["l_shipdate"].device)
    q06_kernel[(blocks,)](
        t["l_shipdate"],
        t["l_discount"],
        t["l_quantity"],
        t["l_extendedprice"],
        partial,
        n,
        s["date"],
        s["end"],
        s["low"],
        s["high"],
        s["quantity"],
        BLOCK=BLOCK,
    )
    return partial.sum().reshape(1, 1)
