"""TPC-H Q18, large volume customer: the IN subquery's per-order quantity sum is computed once for
every order (`index_add_` over the order rows), the large orders kept, top 100 by total price."""

from _tpch import decode, load, lookup, order_by, segment_sum, table

COLUMNS = (
    ("c_name", "str:c_name"),
    ("c_custkey", "int"),
    ("o_orderkey", "int"),
    ("o_orderdate", "date"),
    ("o_totalprice", "float"),
    ("sum(l_quantity)", "float"),
)


def extract(tables, quantity=300):
    tensors, dictionaries = load(
        tables,
        {
            "customer": {"c_custkey": "int", "c_name": "str"},
            "orders": {"o_orderkey": "int", "o_custkey": "int", "o_orderdate": "date", "o_totalprice": "float"},
            "lineitem": {"l_orderkey": "int", "l_quantity": "float"},
        },
    )
    return tensors, {"quantity": quantity}, dictionaries


def _query_core(t, s):
    order, found = lookup(t["o_orderkey"], t["l_orderkey"])
    total = segment_sum(t["l_quantity"][found], order[found], len(t["o_orderkey"]))
    customer, c_found = lookup(t["c_custkey"], t["o_custkey"])
    big = (total > s["quantity"]) & c_found
    rows = big.nonzero().reshape(-1)
    price, date = t["o_totalprice"][rows], t["o_orderdate"][rows]
    rows = rows[order_by([(price, True), (date, False)])[:100]]
    customer = customer[rows]
    return table(
        t["c_name"][customer],
        t["c_custkey"][customer],
        t["o_orderkey"][rows],
        t["o_orderdate"][rows],
        t["o_totalprice"][rows],
        total[rows],
    )


def run_query(tables, **params):
    """
    SELECT
        c_name,
        c_custkey,
        o_orderkey,
        o_orderdate,
        o_totalprice,
        sum(l_quantity)
    FROM
        customer,
        orders,
        lineitem
    WHERE
        o_orderkey IN (
            SELECT
                l_orderkey
            FROM
                lineitem
            GROUP BY
                l_orderkey
            HAVING
                sum(l_quantity) > 300)
        AND c_custkey = o_custkey
        AND o_orderkey = l_orderkey
    GROUP BY
        c_name,
        c_custkey,
        o_orderkey,
        o_orderdate,
        o_totalprice
    ORDER BY
        o_totalprice DESC,
        o_orderdate
    LIMIT 100;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
