"""TPC-H Q12, shipping modes and order priority: lines of two ship modes received in a year, late
against commit, counted per mode as high or low priority of their order. Streamable: two counts."""

import torch

from _tpch import day, decode, group, in_table, load, lookup, segment_sum, table

COLUMNS = (("l_shipmode", "str:l_shipmode"), ("high_line_count", "int"), ("low_line_count", "int"))
STREAM = "lineitem"
PARTIAL_KEYS = 1


def extract(tables, modes=("MAIL", "SHIP"), date="1994-01-01", end="1995-01-01"):
    tensors, dictionaries = load(
        tables,
        {
            "orders": {"o_orderkey": "int", "o_orderpriority": "str"},
            "lineitem": {
                "l_orderkey": "int",
                "l_shipmode": "str",
                "l_commitdate": "date",
                "l_receiptdate": "date",
                "l_shipdate": "date",
            },
        },
    )
    tensors["l_shipmode_in"] = in_table(dictionaries["l_shipmode"], modes)
    tensors["o_orderpriority_high"] = in_table(dictionaries["o_orderpriority"], ("1-URGENT", "2-HIGH"))
    return tensors, {"date": day(date), "end": day(end)}, dictionaries


def _partial_core(t, s):
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    keep = (
        found
        & t["l_shipmode_in"][t["l_shipmode"].long()]
        & (t["l_commitdate"] < t["l_receiptdate"])
        & (t["l_shipdate"] < t["l_commitdate"])
        & (t["l_receiptdate"] >= s["date"])
        & (t["l_receiptdate"] < s["end"])
    )
    high = t["o_orderpriority_high"][t["o_orderpriority"][order[keep]].long()].to(torch.int64)
    keys, ids = group(t["l_shipmode"][keep])
    return table(keys[:, 0], segment_sum(high, ids, len(keys)), segment_sum(1 - high, ids, len(keys)))


def _final(p, t, s):
    return p


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        l_shipmode,
        sum(
            CASE WHEN o_orderpriority = '1-URGENT'
                OR o_orderpriority = '2-HIGH' THEN
                1
            ELSE
                0
            END) AS high_line_count,
        sum(
            CASE WHEN o_orderpriority <> '1-URGENT'
                AND o_orderpriority <> '2-HIGH' THEN
                1
            ELSE
                0
            END) AS low_line_count
    FROM
        orders,
        lineitem
    WHERE
        o_orderkey = l_orderkey
        AND l_shipmode IN ('MAIL', 'SHIP')
        AND l_commitdate < l_receiptdate
        AND l_shipdate < l_commitdate
        AND l_receiptdate >= CAST('1994-01-01' AS date)
        AND l_receiptdate < CAST('1995-01-01' AS date)
    GROUP BY
        l_shipmode
    ORDER BY
        l_shipmode;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
