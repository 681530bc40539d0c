"""TPC-H Q6, forecasting revenue change: four range filters and one masked sum. Streamable."""

import torch

from _tpch import day, decode, load, table

COLUMNS = (("revenue", "float"),)
STREAM = "lineitem"
PARTIAL_KEYS = 0


def extract(tables, date="1994-01-01", end="1995-01-01", discount=0.06, quantity=24):
    tensors, dictionaries = load(
        tables,
        {"lineitem": {"l_shipdate": "date", "l_discount": "float", "l_quantity": "float", "l_extendedprice": "float"}},
    )
    # BETWEEN 0.05 AND 0.07 on decimals of whole cents: the bounds moved half a cent out, so that no
    # rounding (float64 here, float32 for a scalar a Triton kernel takes) moves a discount across them.
    scalars = {
        "date": day(date),
        "end": day(end),
        "low": discount - 0.015,
        "high": discount + 0.015,
        "quantity": quantity,
    }
    return tensors, scalars, dictionaries


def _partial_core(t, s):
    keep = (
        (t["l_shipdate"] >= s["date"])
        & (t["l_shipdate"] < s["end"])
        & (t["l_discount"] >= s["low"])
        & (t["l_discount"] <= s["high"])
        & (t["l_quantity"] < s["quantity"])
    )
    revenue = torch.where(keep, t["l_extendedprice"] * t["l_discount"], 0.0).sum()
    return table(revenue)


def _final(p, t, s):
    return p


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        sum(l_extendedprice * l_discount) AS revenue
    FROM
        lineitem
    WHERE
        l_shipdate >= CAST('1994-01-01' AS date)
        AND l_shipdate < CAST('1995-01-01' AS date)
        AND l_discount BETWEEN 0.05
        AND 0.07
        AND l_quantity < 24;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
