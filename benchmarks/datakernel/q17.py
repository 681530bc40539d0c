"""TPC-H Q17, small-quantity-order revenue: the correlated `0.2 * avg(l_quantity)` per part becomes a
per-part sum and count over all lines; `quantity < 0.2 * sum / count` is decided exactly on integers
as `5 * quantity * count < sum` (quantities are whole numbers)."""

from _tpch import code_of, decode, load, lookup, segment_count, segment_sum, sql_sum, table

COLUMNS = (("avg_yearly", "float"),)


def extract(tables, brand="Brand#23", container="MED BOX"):
    tensors, dictionaries = load(
        tables,
        {
            "lineitem": {"l_partkey": "int", "l_quantity": "cents", "l_extendedprice": "float"},
            "part": {"p_partkey": "int", "p_brand": "str", "p_container": "str"},
        },
    )
    scalars = {
        "brand": code_of(dictionaries["p_brand"], brand),
        "container": code_of(dictionaries["p_container"], container),
    }
    return tensors, scalars, dictionaries


def _query_core(t, s):
    part, found = lookup(t["p_partkey"], t["l_partkey"])
    n = len(t["p_partkey"])
    quantity = t["l_quantity"]
    total = segment_sum(quantity[found], part[found], n)
    count = segment_count(part[found], n)
    chosen = (t["p_brand"] == s["brand"]) & (t["p_container"] == s["container"])
    keep = found & chosen[part] & (5 * quantity * count[part] < total[part])
    return table(sql_sum(t["l_extendedprice"], keep) / 7.0)


def run_query(tables, **params):
    """
    SELECT
        sum(l_extendedprice) / 7.0 AS avg_yearly
    FROM
        lineitem,
        part
    WHERE
        p_partkey = l_partkey
        AND p_brand = 'Brand#23'
        AND p_container = 'MED BOX'
        AND l_quantity < (
            SELECT
                0.2 * avg(l_quantity)
            FROM
                lineitem
            WHERE
                l_partkey = p_partkey);
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
