"""Triton core of TPC-H Q19: the part lookup stays in torch; one pass over lineitem gathers brand, size
and container of each line's part and evaluates the three OR-ed conjunctions in registers."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


def lookup(build, probe):
    keys, order = torch.sort(build)
    at = torch.searchsorted(keys, probe).clamp(max=len(keys) - 1)
    return order[at], keys[at] == probe


@triton.jit
def q19_kernel(
    part,
    found,
    quantity,
    price,
    discount,
    shipmode,
    shipinstruct,
    p_brand,
    p_size,
    p_container,
    mode_lut,
    box0,
    box1,
    box2,
    partial,
    n,
    instruct,
    brand0,
    brand1,
    brand2,
    qty0,
    qty1,
    qty2,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    f = tl.load(found + offs, mask=inside, other=0)
    mode = tl.load(shipmode + offs, mask=inside, other=0)
    common = inside & (f != 0) & (tl.load(mode_lut + mode, mask=inside, other=0) != 0)
    common = common & (tl.load(shipinstruct + offs, mask=inside, other=-1) == instruct)
    row = tl.load(part + offs, mask=common, other=0)
    brand = tl.load(p_brand + row, mask=common, other=-1)
    size = tl.load(p_size + row, mask=common, other=0)
    box = tl.load(p_container + row, mask=common, other=0)
    q = tl.load(quantity + offs, mask=common, other=0.0)
    one = (brand == brand0) & (tl.load(box0 + box, mask=common, other=0) != 0) & (q >= qty0) & (q <= qty0 + 10)
    one = one & (size >= 1) & (size <= 5)
    two = (brand == brand1) & (tl.load(box1 + box, mask=common, other=0) != 0) & (q >= qty1) & (q <= qty1 + 10)
    two = two & (size >= 1) & (size <= 10)
    three = (brand == brand2) & (tl.load(box2 + box, mask=common, other=0) != 0) & (q >= qty2) & (q <= qty2 + 10)
    three = three & (size >= 1) & (size <= 15)
    keep = common & (one | two | three)
    p = tl.load(price + offs, mask=keep, other=0.0)
    d = tl.load(discount + offs, mask=keep, other=0.0)
    tl.store(partial + pid, tl.sum(tl.where(keep, p * (1 - d), 0.0), axis=0))


def core(t, s):
    part, found = lookup(t["p_partkey"], t["l_partkey"])
    n = part.numel()
    blocks = max(triton.cdiv(n, BLOCK), 1)
    partial = torch.empty(blocks, dtype=torch.float64, device=part.device)
    luts = [
        t[name].to(torch.int8) for name in ("l_shipmode_in", "p_container_in0", "p_container_in1", "p_container_in2")
    ]
    q19_kernel[(blocks,)](
        part,
        found.to(torch.int8),
        t["l_quantity"],
        t["l_extendedprice"],
        t["l_discount"],
        t["l_shipmode"],
        t["l_shipinstruct"],
        t["p_brand"],
        t["p_size"],
        t["p_container"],
        *luts,
        partial,
        n,
        s["instruct"],
        s["brand0"],
        s["brand1"],
        s["brand2"],
        s["quantity0"],
        s["quantity1"],
        s["quantity2"],
        BLOCK=BLOCK,
    )
    return partial.sum().reshape(1, 1)
