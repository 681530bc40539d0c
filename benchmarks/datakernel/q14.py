"""TPC-H Q14, promotion effect: one month's lines joined to their part, the promotional share of
revenue as a ratio of two masked sums. Streamable: the two sums."""

import torch

from _tpch import day, decode, like_table, load, lookup, table

COLUMNS = (("promo_revenue", "float"),)
STREAM = "lineitem"
PARTIAL_KEYS = 0


def extract(tables, date="1995-09-01", end="1995-10-01"):
    tensors, dictionaries = load(
        tables,
        {
            "lineitem": {"l_partkey": "int", "l_extendedprice": "float", "l_discount": "float", "l_shipdate": "date"},
            "part": {"p_partkey": "int", "p_type": "str"},
        },
    )
    tensors["p_type_like"] = like_table(dictionaries["p_type"], "PROMO%")
    return tensors, {"date": day(date), "end": day(end)}, dictionaries


def _partial_core(t, s):
    part, found = lookup(t["p_partkey"], t["l_partkey"])
    keep = found & (t["l_shipdate"] >= s["date"]) & (t["l_shipdate"] < s["end"])
    volume = torch.where(keep, t["l_extendedprice"] * (1 - t["l_discount"]), 0.0)
    promo = torch.where(t["p_type_like"][t["p_type"][part].long()], volume, 0.0)
    return table(promo.sum(), volume.sum())


def _final(p, t, s):
    return table(100.0 * p[:, 0] / p[:, 1])


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        100.00 * sum(
            CASE WHEN p_type LIKE 'PROMO%' THEN
                l_extendedprice * (1 - l_discount)
            ELSE
                0
            END) / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
    FROM
        lineitem,
        part
    WHERE
        l_partkey = p_partkey
        AND l_shipdate >= date '1995-09-01'
        AND l_shipdate < CAST('1995-10-01' AS date);
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
