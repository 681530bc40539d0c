"""TPC-H Q8, national market share: an eight-table join as lookups from lineitem, the CASE as a
masked volume, the share per order year as a ratio of two sums. Streamable: both sums per year."""

import torch

from _tpch import code_of, day, decode, group, load, lookup, segment_sum, table, year_of

COLUMNS = (("o_year", "int"), ("mkt_share", "float"))
STREAM = "lineitem"
PARTIAL_KEYS = 1


def extract(
    tables, nation="BRAZIL", region="AMERICA", part_type="ECONOMY ANODIZED STEEL", date="1995-01-01", end="1996-12-31"
):
    tensors, dictionaries = load(
        tables,
        {
            "part": {"p_partkey": "int", "p_type": "str"},
            "supplier": {"s_suppkey": "int", "s_nationkey": "int"},
            "lineitem": {
                "l_orderkey": "int",
                "l_partkey": "int",
                "l_suppkey": "int",
                "l_extendedprice": "float",
                "l_discount": "float",
            },
            "orders": {"o_orderkey": "int", "o_custkey": "int", "o_orderdate": "date"},
            "customer": {"c_custkey": "int", "c_nationkey": "int"},
            "nation": {"n_nationkey": "int", "n_name": "str", "n_regionkey": "int"},
            "region": {"r_regionkey": "int", "r_name": "str"},
        },
    )
    scalars = {
        "nation": code_of(dictionaries["n_name"], nation),
        "region": code_of(dictionaries["r_name"], region),
        "type": code_of(dictionaries["p_type"], part_type),
        "date": day(date),
        "end": day(end),
    }
    return tensors, scalars, dictionaries


def _partial_core(t, s):
    regions = t["r_regionkey"][t["r_name"] == s["region"]]
    part, p_found = lookup(t["p_partkey"], t["l_partkey"])
    supplier, s_found = lookup(t["s_suppkey"], t["l_suppkey"])
    order, o_found = lookup(t["o_orderkey"], t["l_orderkey"])
    customer, c_found = lookup(t["c_custkey"], t["o_custkey"][order])
    cust_nation, _ = lookup(t["n_nationkey"], t["c_nationkey"][customer])
    supp_nation, _ = lookup(t["n_nationkey"], t["s_nationkey"][supplier])
    date = t["o_orderdate"][order]
    keep = (
        p_found
        & s_found
        & o_found
        & c_found
        & (t["p_type"][part] == s["type"])
        & torch.isin(t["n_regionkey"][cust_nation], regions)
        & (date >= s["date"])
        & (date <= s["end"])
    )
    volume = t["l_extendedprice"][keep] * (1 - t["l_discount"][keep])
    ours = torch.where(t["n_name"][supp_nation[keep]] == s["nation"], volume, 0.0)
    keys, ids = group(year_of(date[keep]))
    return table(keys[:, 0], segment_sum(ours, ids, len(keys)), segment_sum(volume, ids, len(keys)))


def _final(p, t, s):
    return table(p[:, 0], p[:, 1] / p[:, 2])


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        o_year,
        sum(
            CASE WHEN nation = 'BRAZIL' THEN
                volume
            ELSE
                0
            END) / sum(volume) AS mkt_share
    FROM (
        SELECT
            extract(year FROM o_orderdate) AS o_year,
            l_extendedprice * (1 - l_discount) AS volume,
            n2.n_name AS nation
        FROM
            part,
            supplier,
            lineitem,
            orders,
            customer,
            nation n1,
            nation n2,
            region
        WHERE
            p_partkey = l_partkey
            AND s_suppkey = l_suppkey
            AND l_orderkey = o_orderkey
            AND o_custkey = c_custkey
            AND c_nationkey = n1.n_nationkey
            AND n1.n_regionkey = r_regionkey
            AND r_name = 'AMERICA'
            AND s_nationkey = n2.n_nationkey
            AND o_orderdate BETWEEN CAST('1995-01-01' AS date)
            AND CAST('1996-12-31' AS date)
            AND p_type = 'ECONOMY ANODIZED STEEL') AS all_nations
    GROUP BY
        o_year
    ORDER BY
        o_year;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
