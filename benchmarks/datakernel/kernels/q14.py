"""Triton core of TPC-H Q14: the part join's lookup (sort + searchsorted) stays in torch; one pass over
lineitem gathers each line's part type and promo flag, and sums promo and total volume per block."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


def lookup(build, probe):
    """Row of `build` (unique keys) for every probe key, and whether it was found."""
    keys, order = torch.sort(build)
    at = torch.searchsorted(keys, probe).clamp(max=len(keys) - 1)
    return order[at], keys[at] == probe


@triton.jit
def q14_kernel(ship, price, discount, part, found, p_type, promo_lut, partial, n, date, end, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    d = tl.load(ship + offs, mask=inside, other=0)
    f = tl.load(found + offs, mask=inside, other=0)
    keep = inside & (f != 0) & (d >= date) & (d < end)
    row = tl.load(part + offs, mask=keep, other=0)
    code = tl.load(p_type + row, mask=keep, other=0)
    promo = tl.load(promo_lut + code, mask=keep, other=0)
    volume = tl.where(
        keep, tl.load(price + offs, mask=keep, other=0.0) * (1 - tl.load(discount + offs, mask=keep, other=0.0)), 0.0
    )
    tl.store(partial + pid * 2, tl.sum(tl.where(promo != 0, volume, 0.0), axis=0))
    tl.store(partial + pid * 2 + 1, tl.sum(volume, axis=0))


def core(t, s):
    part, found = lookup(t["p_partkey"], t["l_partkey"])
    n = part.numel()
    blocks = max(triton.cdiv(n, BLOCK), 1)
    partial = torch.empty(blocks, 2, dtype=torch.float64, device=part.device)
    q14_kernel[(blocks,)](
        t["l_shipdate"],
        t["l_extendedprice"],
        t["l_discount"],
        part,
        found.to(torch.int8),
        t["p_type"],
        t["p_type_like"].to(torch.int8),
        partial,
        n,
        s["date"],
        s["end"],
        BLOCK=BLOCK,
    )
    sums = partial.sum(dim=0)
    return (100.0 * sums[0] / sums[1]).reshape(1, 1)
