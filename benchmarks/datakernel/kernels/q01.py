"""Triton core of TPC-H Q1: one pass over lineitem; each block sums the six aggregates (quantity, price,
discounted price, charge, discount, count) for every (return flag, line status) group at once, a
one-hot over at most `GROUPS` group ids; torch adds the blocks' partials and forms the averages."""

import torch
import triton
import triton.language as tl

BLOCK = 1024
SUMS = 6


@triton.jit
def q01_kernel(
    flag,
    status,
    quantity,
    price,
    discount,
    tax,
    ship,
    partial,
    n,
    cutoff,
    statuses,
    GROUPS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    keep = inside & (tl.load(ship + offs, mask=inside, other=0) <= cutoff)
    gid = tl.load(flag + offs, mask=keep, other=0) * statuses + tl.load(status + offs, mask=keep, other=0)
    q = tl.load(quantity + offs, mask=keep, other=0.0)
    p = tl.load(price + offs, mask=keep, other=0.0)
    d = tl.load(discount + offs, mask=keep, other=0.0)
    x = tl.load(tax + offs, mask=keep, other=0.0)
    disc_price = p * (1 - d)
    groups = tl.arange(0, GROUPS)
    hit = keep[:, None] & (gid[:, None] == groups[None, :])
    base = partial + pid * GROUPS * 6 + groups * 6
    tl.store(base, tl.sum(tl.where(hit, q[:, None], 0.0), axis=0))
    tl.store(base + 1, tl.sum(tl.where(hit, p[:, None], 0.0), axis=0))
    tl.store(base + 2, tl.sum(tl.where(hit, disc_price[:, None], 0.0), axis=0))
    tl.store(base + 3, tl.sum(tl.where(hit, (disc_price * (1 + x))[:, None], 0.0), axis=0))
    tl.store(base + 4, tl.sum(tl.where(hit, d[:, None], 0.0), axis=0))
    tl.store(base + 5, tl.sum(tl.where(hit, 1.0, 0.0), axis=0))


def core(t, s):
    flag, status = t["l_returnflag"], t["l_linestatus"]
    n = flag.numel()
    flags, statuses = int(flag.max()) + 1, int(status.max()) + 1
    groups = triton.next_power_of_2(max(flags * statuses, 2))
    blocks = max(triton.cdiv(n, BLOCK), 1)
    partial = torch.empty(blocks, groups, SUMS, dtype=torch.float64, device=flag.device)
    q01_kernel[(blocks,)](
        flag,
        status,
        t["l_quantity"],
        t["l_extendedprice"],
        t["l_discount"],
        t["l_tax"],
        t["l_shipdate"],
        partial,
        n,
        s["cutoff"],
        statuses,
        GROUPS=groups,
        BLOCK=BLOCK,
    )
    sums = partial.sum(dim=0)
    present = sums[:, 5] > 0
    gid = torch.arange(groups, device=flag.device)[present]
    sums = sums[present]
    count = sums[:, 5]
    return torch.stack(
        [
            (gid // statuses).double(),
            (gid % statuses).double(),
            sums[:, 0],
            sums[:, 1],
            sums[:, 2],
            sums[:, 3],
            sums[:, 0] / count,
            sums[:, 1] / count,
            sums[:, 4] / count,
            count,
        ],
        dim=1,
    )
