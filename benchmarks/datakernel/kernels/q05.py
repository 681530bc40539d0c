"""Triton core of TPC-H Q5: the joins' lookups (orders, customers, suppliers, nations) stay in torch;
one pass over lineitem gathers the order date, both nation keys and the supplier nation's slot (its
rank among the region's nations, -1 outside it), and sums revenue per slot (a one-hot over at most
`GROUPS` slots) per block."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


def lookup(build, probe):
    keys, order = torch.sort(build)
    at = torch.searchsorted(keys, probe).clamp(max=len(keys) - 1)
    return order[at], keys[at] == probe


@triton.jit
def q05_kernel(
    order,
    customer,
    supplier,
    found,
    o_date,
    c_nation,
    s_nation,
    s_slot,
    price,
    discount,
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
    keep = inside & (tl.load(found + offs, mask=inside, other=0) != 0)
    o = tl.load(order + offs, mask=keep, other=0)
    c = tl.load(customer + offs, mask=keep, other=0)
    s = tl.load(supplier + offs, mask=keep, other=0)
    day = tl.load(o_date + o, mask=keep, other=0)
    nation = tl.load(s_nation + s, mask=keep, other=-1)
    slot = tl.load(s_slot + s, mask=keep, other=-1)
    keep = keep & (day >= date) & (day < end) & (tl.load(c_nation + c, mask=keep, other=-2) == nation) & (slot >= 0)
    volume = tl.load(price + offs, mask=keep, other=0.0) * (1 - tl.load(discount + offs, mask=keep, other=0.0))
    groups = tl.arange(0, GROUPS)
    hit = keep[:, None] & (slot[:, None] == groups[None, :])
    tl.store(partial + pid * GROUPS * 2 + groups * 2, tl.sum(tl.where(hit, volume[:, None], 0.0), axis=0))
    tl.store(partial + pid * GROUPS * 2 + groups * 2 + 1, tl.sum(tl.where(hit, 1.0, 0.0), axis=0))


def core(t, s):
    regions = t["r_regionkey"][t["r_name"] == s["region"]]
    order, o_found = lookup(t["o_orderkey"], t["l_orderkey"])
    customer, c_found = lookup(t["c_custkey"], t["o_custkey"][order])
    supplier, s_found = lookup(t["s_suppkey"], t["l_suppkey"])
    nation_row, _ = lookup(t["n_nationkey"], t["s_nationkey"])
    in_region = torch.isin(t["n_regionkey"], regions)
    slots = torch.cumsum(in_region.to(torch.int64), 0) - 1  # a nation's rank among the region's
    supplier_slot = torch.where(in_region, slots, -1)[nation_row]
    region_names = t["n_name"][in_region]
    groups = triton.next_power_of_2(max(len(region_names), 2))
    n = order.numel()
    blocks = max(triton.cdiv(n, BLOCK), 1)
    partial = torch.empty(blocks, groups, 2, dtype=torch.float64, device=order.device)
    q05_kernel[(blocks,)](
        order,
        customer,
        supplier,
        (o_found & c_found & s_found).to(torch.int8),
        t["o_orderdate"],
        t["c_nationkey"],
        t["s_nationkey"],
        supplier_slot,
        t["l_extendedprice"],
        t["l_discount"],
        partial,
        n,
        s["date"],
        s["end"],
        GROUPS=groups,
        BLOCK=BLOCK,
    )
    sums = partial.sum(dim=0)
    present = sums[:, 1] > 0
    present[len(region_names) :] = False
    codes = torch.cat([region_names, region_names.new_zeros(groups - len(region_names))])[present].double()
    revenue = sums[present, 0]
    _, rank = torch.sort(revenue, descending=True, stable=True)
    return torch.stack([codes[rank], revenue[rank]], dim=1)
