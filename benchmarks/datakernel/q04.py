"""TPC-H Q4, order priority checking: EXISTS becomes a semi join (`torch.isin` on the order keys of
late lines), then a count per priority."""

import torch

from _tpch import day, decode, group, load, segment_count, table

COLUMNS = (("o_orderpriority", "str:o_orderpriority"), ("order_count", "int"))


def extract(tables, date="1993-07-01", end="1993-10-01"):
    tensors, dictionaries = load(
        tables,
        {
            "orders": {"o_orderkey": "int", "o_orderdate": "date", "o_orderpriority": "str"},
            "lineitem": {"l_orderkey": "int", "l_commitdate": "date", "l_receiptdate": "date"},
        },
    )
    return tensors, {"date": day(date), "end": day(end)}, dictionaries


def _query_core(t, s):
    late = t["l_orderkey"][t["l_commitdate"] < t["l_receiptdate"]]
    keep = (t["o_orderdate"] >= s["date"]) & (t["o_orderdate"] < s["end"]) & torch.isin(t["o_orderkey"], late)
    keys, ids = group(t["o_orderpriority"][keep])
    return table(keys[:, 0], segment_count(ids, len(keys)))


def run_query(tables, **params):
    """
    SELECT
        o_orderpriority,
        count(*) AS order_count
    FROM
        orders
    WHERE
        o_orderdate >= CAST('1993-07-01' AS date)
        AND o_orderdate < CAST('1993-10-01' AS date)
        AND EXISTS (
            SELECT
                *
            FROM
                lineitem
            WHERE
                l_orderkey = o_orderkey
                AND l_commitdate < l_receiptdate)
    GROUP BY
        o_orderpriority
    ORDER BY
        o_orderpriority;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
