"""TPC-H Q20, potential part promotion: the correlated `0.5 * sum(l_quantity)` per (part, supplier)
becomes a sum over lines looked up in partsupp by the composite key; `availqty > 0.5 * sum` is exact
on integers as `2 * availqty > sum`, and an offer with no lines has a NULL sum and is dropped."""

import torch

from _tpch import code_of, composite, day, decode, like_table, load, lookup, order_by, segment_count, segment_sum, table

COLUMNS = (("s_name", "str:s_name"), ("s_address", "str:s_address"))


def extract(tables, color="forest", date="1994-01-01", end="1995-01-01", nation="CANADA"):
    tensors, dictionaries = load(
        tables,
        {
            "supplier": {"s_suppkey": "int", "s_name": "str", "s_address": "str", "s_nationkey": "int"},
            "nation": {"n_nationkey": "int", "n_name": "str"},
            "partsupp": {"ps_partkey": "int", "ps_suppkey": "int", "ps_availqty": "int"},
            "part": {"p_partkey": "int", "p_name": "str"},
            "lineitem": {"l_partkey": "int", "l_suppkey": "int", "l_quantity": "cents", "l_shipdate": "date"},
        },
    )
    tensors["p_name_like"] = like_table(dictionaries["p_name"], f"{color}%")
    scalars = {"date": day(date), "end": day(end), "nation": code_of(dictionaries["n_name"], nation)}
    return tensors, scalars, dictionaries


def _query_core(t, s):
    forest = t["p_partkey"][t["p_name_like"][t["p_name"].long()]]
    offer, found = lookup(composite(t["ps_partkey"], t["ps_suppkey"]), composite(t["l_partkey"], t["l_suppkey"]))
    lines = found & (t["l_shipdate"] >= s["date"]) & (t["l_shipdate"] < s["end"])
    n = len(t["ps_partkey"])
    shipped = segment_sum(t["l_quantity"][lines], offer[lines], n)  # hundredths
    any_lines = segment_count(offer[lines], n) > 0
    chosen = torch.isin(t["ps_partkey"], forest) & any_lines & (200 * t["ps_availqty"] > shipped)
    nation, _ = lookup(t["n_nationkey"], t["s_nationkey"])
    keep = torch.isin(t["s_suppkey"], t["ps_suppkey"][chosen]) & (t["n_name"][nation] == s["nation"])
    name, address = t["s_name"][keep], t["s_address"][keep]
    order = order_by([(name, False)])
    return table(name[order], address[order])


def run_query(tables, **params):
    """
    SELECT
        s_name,
        s_address
    FROM
        supplier,
        nation
    WHERE
        s_suppkey IN (
            SELECT
                ps_suppkey
            FROM
                partsupp
            WHERE
                ps_partkey IN (
                    SELECT
                        p_partkey
                    FROM
                        part
                    WHERE
                        p_name LIKE 'forest%')
                    AND ps_availqty > (
                        SELECT
                            0.5 * sum(l_quantity)
                        FROM
                            lineitem
                        WHERE
                            l_partkey = ps_partkey
                            AND l_suppkey = ps_suppkey
                            AND l_shipdate >= CAST('1994-01-01' AS date)
                            AND l_shipdate < CAST('1995-01-01' AS date)))
                AND s_nationkey = n_nationkey
                AND n_name = 'CANADA'
            ORDER BY
                s_name;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
