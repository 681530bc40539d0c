"""TPC-H Q10, returned item reporting: returned lines of a quarter's orders, revenue per customer
(the other grouped columns depend on the customer key), top 20. Streamable: revenue per customer."""

from _tpch import code_of, day, decode, group, load, lookup, order_by, segment_sum, table

COLUMNS = (
    ("c_custkey", "int"),
    ("c_name", "str:c_name"),
    ("revenue", "float"),
    ("c_acctbal", "float"),
    ("n_name", "str:n_name"),
    ("c_address", "str:c_address"),
    ("c_phone", "str:c_phone"),
    ("c_comment", "str:c_comment"),
)
STREAM = "lineitem"
PARTIAL_KEYS = 1


def extract(tables, date="1993-10-01", end="1994-01-01", flag="R"):
    tensors, dictionaries = load(
        tables,
        {
            "customer": {
                "c_custkey": "int",
                "c_name": "str",
                "c_address": "str",
                "c_nationkey": "int",
                "c_phone": "str",
                "c_acctbal": "float",
                "c_comment": "str",
            },
            "orders": {"o_orderkey": "int", "o_custkey": "int", "o_orderdate": "date"},
            "lineitem": {"l_orderkey": "int", "l_extendedprice": "float", "l_discount": "float", "l_returnflag": "str"},
            "nation": {"n_nationkey": "int", "n_name": "str"},
        },
    )
    scalars = {"date": day(date), "end": day(end), "flag": code_of(dictionaries["l_returnflag"], flag)}
    return tensors, scalars, dictionaries


def _partial_core(t, s):
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    date = t["o_orderdate"][order]
    keep = found & (t["l_returnflag"] == s["flag"]) & (date >= s["date"]) & (date < s["end"])
    keys, ids = group(t["o_custkey"][order[keep]])
    revenue = segment_sum(t["l_extendedprice"][keep] * (1 - t["l_discount"][keep]), ids, len(keys))
    return table(keys[:, 0], revenue)


def _final(p, t, s):
    p = p[order_by([(p[:, 1], True)])[:20]]
    customer, _ = lookup(t["c_custkey"], p[:, 0].round().long())
    nation, _ = lookup(t["n_nationkey"], t["c_nationkey"][customer])
    return table(
        p[:, 0],
        t["c_name"][customer],
        p[:, 1],
        t["c_acctbal"][customer],
        t["n_name"][nation],
        t["c_address"][customer],
        t["c_phone"][customer],
        t["c_comment"][customer],
    )


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        c_custkey,
        c_name,
        sum(l_extendedprice * (1 - l_discount)) AS revenue,
        c_acctbal,
        n_name,
        c_address,
        c_phone,
        c_comment
    FROM
        customer,
        orders,
        lineitem,
        nation
    WHERE
        c_custkey = o_custkey
        AND l_orderkey = o_orderkey
        AND o_orderdate >= CAST('1993-10-01' AS date)
        AND o_orderdate < CAST('1994-01-01' AS date)
        AND l_returnflag = 'R'
        AND c_nationkey = n_nationkey
    GROUP BY
        c_custkey,
        c_name,
        c_acctbal,
        c_phone,
        n_name,
        c_address,
        c_comment
    ORDER BY
        revenue DESC
    LIMIT 20;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
