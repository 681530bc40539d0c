"""Triton core of TPC-H Q10: the order-side filter (quarter) and the lookups stay in torch; one pass over
lineitem adds each returned line's revenue to its customer's accumulator (`tl.atomic_add`); torch takes
the top 20 customers and gathers their columns."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


def lookup(build, probe):
    keys, order = torch.sort(build)
    at = torch.searchsorted(keys, probe).clamp(max=len(keys) - 1)
    return order[at], keys[at] == probe


@triton.jit
def q10_kernel(
    order, found, flag, order_customer, order_ok, price, discount, revenue, lines, n, returned, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    keep = inside & (tl.load(found + offs, mask=inside, other=0) != 0)
    keep = keep & (tl.load(flag + offs, mask=inside, other=-1) == returned)
    row = tl.load(order + offs, mask=keep, other=0)
    keep = keep & (tl.load(order_ok + row, mask=keep, other=0) != 0)
    customer = tl.load(order_customer + row, mask=keep, other=0)
    volume = tl.load(price + offs, mask=keep, other=0.0) * (1 - tl.load(discount + offs, mask=keep, other=0.0))
    tl.atomic_add(revenue + customer, volume, mask=keep)
    tl.atomic_add(lines + customer, 1, mask=keep)


def core(t, s):
    order_customer, c_found = lookup(t["c_custkey"], t["o_custkey"])
    order_ok = c_found & (t["o_orderdate"] >= s["date"]) & (t["o_orderdate"] < s["end"])
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    n = order.numel()
    customers = t["c_custkey"].numel()
    revenue = torch.zeros(customers, dtype=torch.float64, device=order.device)
    lines = torch.zeros(customers, dtype=torch.int32, device=order.device)
    q10_kernel[(max(triton.cdiv(n, BLOCK), 1),)](
        order,
        found.to(torch.int8),
        t["l_returnflag"],
        order_customer,
        order_ok.to(torch.int8),
        t["l_extendedprice"],
        t["l_discount"],
        revenue,
        lines,
        n,
        s["flag"],
        BLOCK=BLOCK,
    )
    rows = torch.nonzero(lines > 0).reshape(-1)
    rows = rows[torch.sort(t["c_custkey"][rows], stable=True)[1]]
    rows = rows[torch.sort(revenue[rows], descending=True, stable=True)[1]][:20]
    nation, _ = lookup(t["n_nationkey"], t["c_nationkey"][rows])
    columns = [
        t["c_custkey"][rows],
        t["c_name"][rows],
        revenue[rows],
        t["c_acctbal"][rows],
        t["n_name"][nation],
        t["c_address"][rows],
        t["c_phone"][rows],
        t["c_comment"][rows],
    ]
    return torch.stack([c.double() for c in columns], dim=1)
