"""Triton core of TPC-H Q3: the order-side filter (segment, date) and the lookups stay in torch; one pass
over lineitem adds each kept line's revenue to its order's accumulator (`tl.atomic_add`); torch keeps
the orders with lines and takes the top 10."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


def lookup(build, probe):
    keys, order = torch.sort(build)
    at = torch.searchsorted(keys, probe).clamp(max=len(keys) - 1)
    return order[at], keys[at] == probe


@triton.jit
def q03_kernel(order, found, order_ok, ship, price, discount, revenue, lines, n, date, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    keep = inside & (tl.load(found + offs, mask=inside, other=0) != 0)
    keep = keep & (tl.load(ship + offs, mask=inside, other=0) > date)
    row = tl.load(order + offs, mask=keep, other=0)
    keep = keep & (tl.load(order_ok + row, mask=keep, other=0) != 0)
    volume = tl.load(price + offs, mask=keep, other=0.0) * (1 - tl.load(discount + offs, mask=keep, other=0.0))
    tl.atomic_add(revenue + row, volume, mask=keep)
    tl.atomic_add(lines + row, 1, mask=keep)


def core(t, s):
    customer, c_found = lookup(t["c_custkey"], t["o_custkey"])
    order_ok = c_found & (t["c_mktsegment"][customer] == s["segment"]) & (t["o_orderdate"] < s["date"])
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    n = order.numel()
    orders = t["o_orderkey"].numel()
    revenue = torch.zeros(orders, dtype=torch.float64, device=order.device)
    lines = torch.zeros(orders, dtype=torch.int32, device=order.device)
    q03_kernel[(max(triton.cdiv(n, BLOCK), 1),)](
        order,
        found.to(torch.int8),
        order_ok.to(torch.int8),
        t["l_shipdate"],
        t["l_extendedprice"],
        t["l_discount"],
        revenue,
        lines,
        n,
        s["date"],
        BLOCK=BLOCK,
    )
    rows = torch.nonzero(lines > 0).reshape(-1)
    rows = rows[torch.sort(t["o_orderkey"][rows], stable=True)[1]]
    rows = rows[torch.sort(t["o_orderdate"][rows], stable=True)[1]]
    rows = rows[torch.sort(revenue[rows], descending=True, stable=True)[1]][:10]
    return torch.stack(
        [
            t["o_orderkey"][rows].double(),
            revenue[rows],
            t["o_orderdate"][rows].double(),
            t["o_shippriority"][rows].double(),
        ],
        dim=1,
    )
