"""TPC-H Q21, suppliers who kept orders waiting: EXISTS (another supplier on the order) and NOT EXISTS
(another late supplier) become counts of distinct (order, supplier) pairs per order, over all lines
and over late lines: a late line qualifies when its order has at least two suppliers and exactly one
late supplier (its own)."""

import torch

from _tpch import code_of, composite, decode, group, load, lookup, order_by, segment_count, table

COLUMNS = (("s_name", "str:s_name"), ("numwait", "int"))


def extract(tables, nation="SAUDI ARABIA"):
    tensors, dictionaries = load(
        tables,
        {
            "supplier": {"s_suppkey": "int", "s_name": "str", "s_nationkey": "int"},
            "lineitem": {"l_orderkey": "int", "l_suppkey": "int", "l_receiptdate": "date", "l_commitdate": "date"},
            "orders": {"o_orderkey": "int", "o_orderstatus": "str"},
            "nation": {"n_nationkey": "int", "n_name": "str"},
        },
    )
    scalars = {"nation": code_of(dictionaries["n_name"], nation), "status": code_of(dictionaries["o_orderstatus"], "F")}
    return tensors, scalars, dictionaries


def suppliers_per_order(order: torch.Tensor, suppkey: torch.Tensor, orders: int) -> torch.Tensor:
    """The number of distinct suppliers of each order."""
    pairs = torch.unique(composite(order, suppkey))
    return torch.bincount(torch.div(pairs, 1 << 31, rounding_mode="floor"), minlength=orders)


def _query_core(t, s):
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    n = len(t["o_orderkey"])
    late = found & (t["l_receiptdate"] > t["l_commitdate"])
    suppliers = suppliers_per_order(order[found], t["l_suppkey"][found], n)
    late_suppliers = suppliers_per_order(order[late], t["l_suppkey"][late], n)
    supplier, s_found = lookup(t["s_suppkey"], t["l_suppkey"])
    nation, _ = lookup(t["n_nationkey"], t["s_nationkey"][supplier])
    keep = (
        late
        & s_found
        & (t["o_orderstatus"][order] == s["status"])
        & (suppliers[order] >= 2)
        & (late_suppliers[order] == 1)
        & (t["n_name"][nation] == s["nation"])
    )
    keys, ids = group(t["s_name"][supplier[keep]])
    count = segment_count(ids, len(keys))
    order_ = order_by([(count, True), (keys[:, 0], False)])[:100]
    return table(keys[:, 0], count)[order_]


def run_query(tables, **params):
    """
    SELECT
        s_name,
        count(*) AS numwait
    FROM
        supplier,
        lineitem l1,
        orders,
        nation
    WHERE
        s_suppkey = l1.l_suppkey
        AND o_orderkey = l1.l_orderkey
        AND o_orderstatus = 'F'
        AND l1.l_receiptdate > l1.l_commitdate
        AND EXISTS (
            SELECT
                *
            FROM
                lineitem l2
            WHERE
                l2.l_orderkey = l1.l_orderkey
                AND l2.l_suppkey <> l1.l_suppkey)
        AND NOT EXISTS (
            SELECT
                *
            FROM
                lineitem l3
            WHERE
                l3.l_orderkey = l1.l_orderkey
                AND l3.l_suppkey <> l1.l_suppkey
                AND l3.l_receiptdate > l3.l_commitdate)
        AND s_nationkey = n_nationkey
        AND n_name = 'SAUDI ARABIA'
    GROUP BY
        s_name
    ORDER BY
        numwait DESC,
        s_name
    LIMIT 100;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
