"""TPC-H Q3, shipping priority: lineitem joined to orders and customers by sort-merge lookups, revenue
summed per order, top 10 by revenue. Streamable: the partials are revenue per order."""

from _tpch import code_of, day, decode, group, load, lookup, order_by, segment_sum, table

COLUMNS = (("l_orderkey", "int"), ("revenue", "float"), ("o_orderdate", "date"), ("o_shippriority", "int"))
STREAM = "lineitem"
PARTIAL_KEYS = 3


def extract(tables, segment="BUILDING", date="1995-03-15"):
    tensors, dictionaries = load(
        tables,
        {
            "customer": {"c_custkey": "int", "c_mktsegment": "str"},
            "orders": {"o_orderkey": "int", "o_custkey": "int", "o_orderdate": "date", "o_shippriority": "int"},
            "lineitem": {"l_orderkey": "int", "l_extendedprice": "float", "l_discount": "float", "l_shipdate": "date"},
        },
    )
    return tensors, {"segment": code_of(dictionaries["c_mktsegment"], segment), "date": day(date)}, dictionaries


def _partial_core(t, s):
    customer, c_found = lookup(t["c_custkey"], t["o_custkey"])
    order_ok = c_found & (t["c_mktsegment"][customer] == s["segment"]) & (t["o_orderdate"] < s["date"])
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    keep = found & order_ok[order] & (t["l_shipdate"] > s["date"])
    order = order[keep]
    keys, ids = group(t["l_orderkey"][keep], t["o_orderdate"][order], t["o_shippriority"][order])
    revenue = segment_sum(t["l_extendedprice"][keep] * (1 - t["l_discount"][keep]), ids, len(keys))
    return table(keys[:, 0], keys[:, 1], keys[:, 2], revenue)


def _final(p, t, s):
    order = order_by([(p[:, 3], True), (p[:, 1], False)])[:10]
    return table(p[:, 0], p[:, 3], p[:, 1], p[:, 2])[order]


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        l_orderkey,
        sum(l_extendedprice * (1 - l_discount)) AS revenue,
        o_orderdate,
        o_shippriority
    FROM
        customer,
        orders,
        lineitem
    WHERE
        c_mktsegment = 'BUILDING'
        AND c_custkey = o_custkey
        AND l_orderkey = o_orderkey
        AND o_orderdate < CAST('1995-03-15' AS date)
        AND l_shipdate > CAST('1995-03-15' AS date)
    GROUP BY
        l_orderkey,
        o_orderdate,
        o_shippriority
    ORDER BY
        revenue DESC,
        o_orderdate
    LIMIT 10;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
