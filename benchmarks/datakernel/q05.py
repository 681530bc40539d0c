"""TPC-H Q5, local supplier volume: a six-table join as lookups from lineitem (orders, customer,
supplier, nation), the same-nation condition, revenue per nation. Streamable: revenue per nation."""

import torch

from _tpch import code_of, day, decode, group, load, lookup, order_by, segment_sum, table

COLUMNS = (("n_name", "str:n_name"), ("revenue", "float"))
STREAM = "lineitem"
PARTIAL_KEYS = 1


def extract(tables, region="ASIA", date="1994-01-01", end="1995-01-01"):
    tensors, dictionaries = load(
        tables,
        {
            "customer": {"c_custkey": "int", "c_nationkey": "int"},
            "orders": {"o_orderkey": "int", "o_custkey": "int", "o_orderdate": "date"},
            "lineitem": {"l_orderkey": "int", "l_suppkey": "int", "l_extendedprice": "float", "l_discount": "float"},
            "supplier": {"s_suppkey": "int", "s_nationkey": "int"},
            "nation": {"n_nationkey": "int", "n_name": "str", "n_regionkey": "int"},
            "region": {"r_regionkey": "int", "r_name": "str"},
        },
    )
    scalars = {"region": code_of(dictionaries["r_name"], region), "date": day(date), "end": day(end)}
    return tensors, scalars, dictionaries


def _partial_core(t, s):
    regions = t["r_regionkey"][t["r_name"] == s["region"]]
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    date = t["o_orderdate"][order]
    customer, c_found = lookup(t["c_custkey"], t["o_custkey"][order])
    supplier, s_found = lookup(t["s_suppkey"], t["l_suppkey"])
    nationkey = t["s_nationkey"][supplier]
    nation, n_found = lookup(t["n_nationkey"], nationkey)
    keep = (
        found
        & c_found
        & s_found
        & n_found
        & (date >= s["date"])
        & (date < s["end"])
        & (t["c_nationkey"][customer] == nationkey)
        & torch.isin(t["n_regionkey"][nation], regions)
    )
    keys, ids = group(t["n_name"][nation[keep]])
    revenue = segment_sum(t["l_extendedprice"][keep] * (1 - t["l_discount"][keep]), ids, len(keys))
    return table(keys[:, 0], revenue)


def _final(p, t, s):
    return p[order_by([(p[:, 1], True)])]


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        n_name,
        sum(l_extendedprice * (1 - l_discount)) AS revenue
    FROM
        customer,
        orders,
        lineitem,
        supplier,
        nation,
        region
    WHERE
        c_custkey = o_custkey
        AND l_orderkey = o_orderkey
        AND l_suppkey = s_suppkey
        AND c_nationkey = s_nationkey
        AND s_nationkey = n_nationkey
        AND n_regionkey = r_regionkey
        AND r_name = 'ASIA'
        AND o_orderdate >= CAST('1994-01-01' AS date)
        AND o_orderdate < CAST('1995-01-01' AS date)
    GROUP BY
        n_name
    ORDER BY
        revenue DESC;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
