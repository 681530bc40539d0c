"""Triton core of TPC-H Q12: the order lookup stays in torch; one pass over lineitem evaluates the mode
and date conditions, gathers the order's priority, and counts high and low lines per ship mode (a
one-hot over the mode dictionary, at most `GROUPS` codes) per block."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


def lookup(build, probe):
    keys, order = torch.sort(build)
    at = torch.searchsorted(keys, probe).clamp(max=len(keys) - 1)
    return order[at], keys[at] == probe


@triton.jit
def q12_kernel(
    order,
    found,
    shipmode,
    commit,
    receipt,
    ship,
    priority,
    mode_lut,
    high_lut,
    partial,
    n,
    date,
    end,
    GROUPS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    f = tl.load(found + offs, mask=inside, other=0)
    mode = tl.load(shipmode + offs, mask=inside, other=0)
    c = tl.load(commit + offs, mask=inside, other=0)
    r = tl.load(receipt + offs, mask=inside, other=0)
    s = tl.load(ship + offs, mask=inside, other=0)
    keep = inside & (f != 0) & (tl.load(mode_lut + mode, mask=inside, other=0) != 0)
    keep = keep & (c < r) & (s < c) & (r >= date) & (r < end)
    row = tl.load(order + offs, mask=keep, other=0)
    high = tl.load(high_lut + tl.load(priority + row, mask=keep, other=0), mask=keep, other=0) != 0
    groups = tl.arange(0, GROUPS)
    hit = keep[:, None] & (mode[:, None] == groups[None, :])
    high_count = tl.sum((hit & high[:, None]).to(tl.int64), axis=0)
    low_count = tl.sum((hit & ~high[:, None]).to(tl.int64), axis=0)
    tl.store(partial + pid * GROUPS * 2 + groups * 2, high_count)
    tl.store(partial + pid * GROUPS * 2 + groups * 2 + 1, low_count)


def core(t, s):
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    n = order.numel()
    modes = t["l_shipmode_in"].numel()
    groups = triton.next_power_of_2(max(modes, 2))
    blocks = max(triton.cdiv(n, BLOCK), 1)
    partial = torch.empty(blocks, groups, 2, dtype=torch.int64, device=order.device)
    q12_kernel[(blocks,)](
        order,
        found.to(torch.int8),
        t["l_shipmode"],
        t["l_commitdate"],
        t["l_receiptdate"],
        t["l_shipdate"],
        t["o_orderpriority"],
        t["l_shipmode_in"].to(torch.int8),
        t["o_orderpriority_high"].to(torch.int8),
        partial,
        n,
        s["date"],
        s["end"],
        GROUPS=groups,
        BLOCK=BLOCK,
    )
    counts = partial.sum(dim=0)[:modes]
    present = counts.sum(dim=1) > 0
    codes = torch.arange(modes, device=order.device)[present]
    return torch.stack([codes.double(), counts[present, 0].double(), counts[present, 1].double()], dim=1)
