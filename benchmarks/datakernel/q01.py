"""TPC-H Q1, pricing summary report: one filter on the ship date, then eight aggregates per
(return flag, line status). Streamable: the partial aggregates are sums and a count per group."""

import torch

from _tpch import day, decode, group, load, segment_count, segment_sum, table

COLUMNS = (
    ("l_returnflag", "str:l_returnflag"),
    ("l_linestatus", "str:l_linestatus"),
    ("sum_qty", "float"),
    ("sum_base_price", "float"),
    ("sum_disc_price", "float"),
    ("sum_charge", "float"),
    ("avg_qty", "float"),
    ("avg_price", "float"),
    ("avg_disc", "float"),
    ("count_order", "int"),
)
STREAM = "lineitem"
PARTIAL_KEYS = 2


def extract(tables, cutoff="1998-09-02"):
    tensors, dictionaries = load(
        tables,
        {
            "lineitem": {
                "l_returnflag": "str",
                "l_linestatus": "str",
                "l_quantity": "float",
                "l_extendedprice": "float",
                "l_discount": "float",
                "l_tax": "float",
                "l_shipdate": "date",
            }
        },
    )
    return tensors, {"cutoff": day(cutoff)}, dictionaries


def _partial_core(t, s):
    keep = t["l_shipdate"] <= s["cutoff"]
    keys, ids = group(t["l_returnflag"][keep], t["l_linestatus"][keep])
    price, discount = t["l_extendedprice"][keep], t["l_discount"][keep]
    disc_price = price * (1 - discount)
    n = len(keys)
    return table(
        keys[:, 0],
        keys[:, 1],
        segment_sum(t["l_quantity"][keep], ids, n),
        segment_sum(price, ids, n),
        segment_sum(disc_price, ids, n),
        segment_sum(disc_price * (1 + t["l_tax"][keep]), ids, n),
        segment_sum(discount, ids, n),
        segment_count(ids, n),
    )


def _final(p, t, s):
    count = p[:, 7]
    out = torch.cat(
        [p[:, :6], (p[:, 2] / count)[:, None], (p[:, 3] / count)[:, None], (p[:, 6] / count)[:, None], count[:, None]],
        dim=1,
    )
    return out


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        l_returnflag,
        l_linestatus,
        sum(l_quantity) AS sum_qty,
        sum(l_extendedprice) AS sum_base_price,
        sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
        sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
        avg(l_quantity) AS avg_qty,
        avg(l_extendedprice) AS avg_price,
        avg(l_discount) AS avg_disc,
        count(*) AS count_order
    FROM
        lineitem
    WHERE
        l_shipdate <= CAST('1998-09-02' AS date)
    GROUP BY
        l_returnflag,
        l_linestatus
    ORDER BY
        l_returnflag,
        l_linestatus;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
