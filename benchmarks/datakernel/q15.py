"""TPC-H Q15, top supplier: revenue per supplier over a quarter, the suppliers whose revenue equals
the maximum. Revenue is exact int64 (price cents times (100 - discount cents), units of 1e-4), so
`total_revenue = max(total_revenue)` is an exact equality, as DuckDB's decimal arithmetic makes it."""

from _tpch import day, decode, group, load, lookup, segment_sum, table

COLUMNS = (
    ("s_suppkey", "int"),
    ("s_name", "str:s_name"),
    ("s_address", "str:s_address"),
    ("s_phone", "str:s_phone"),
    ("total_revenue", "float"),
)


def extract(tables, date="1996-01-01", end="1996-04-01"):
    tensors, dictionaries = load(
        tables,
        {
            "lineitem": {"l_suppkey": "int", "l_extendedprice": "cents", "l_discount": "cents", "l_shipdate": "date"},
            "supplier": {"s_suppkey": "int", "s_name": "str", "s_address": "str", "s_phone": "str"},
        },
    )
    return tensors, {"date": day(date), "end": day(end)}, dictionaries


def _query_core(t, s):
    keep = (t["l_shipdate"] >= s["date"]) & (t["l_shipdate"] < s["end"])
    keys, ids = group(t["l_suppkey"][keep])
    revenue = segment_sum(t["l_extendedprice"][keep] * (100 - t["l_discount"][keep]), ids, len(keys))
    top = revenue == revenue.max()
    suppkey, revenue = keys[top, 0], revenue[top]
    supplier, found = lookup(t["s_suppkey"], suppkey)
    suppkey, supplier, revenue = suppkey[found], supplier[found], revenue[found]
    return table(
        suppkey, t["s_name"][supplier], t["s_address"][supplier], t["s_phone"][supplier], revenue.double() / 10000
    )


def run_query(tables, **params):
    """
    WITH revenue AS (
        SELECT
            l_suppkey AS supplier_no,
            sum(l_extendedprice * (1 - l_discount)) AS total_revenue
        FROM
            lineitem
        WHERE
            l_shipdate >= CAST('1996-01-01' AS date)
          AND l_shipdate < CAST('1996-04-01' AS date)
        GROUP BY
            supplier_no
    )
    SELECT
        s_suppkey,
        s_name,
        s_address,
        s_phone,
        total_revenue
    FROM
        supplier,
        revenue
    WHERE
        s_suppkey = supplier_no
        AND total_revenue = (
            SELECT
                max(total_revenue)
            FROM revenue)
    ORDER BY
        s_suppkey;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
