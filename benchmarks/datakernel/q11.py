"""TPC-H Q11, important stock identification: stock value per part for one nation's suppliers, kept
above a fraction of the total. Values are exact int64 (cents times quantity), so the HAVING threshold
`value > total * 0.0001` is decided exactly as `value * 10000 > total`."""

from _tpch import code_of, decode, group, load, lookup, order_by, segment_sum, table

COLUMNS = (("ps_partkey", "int"), ("value", "float"))


def extract(tables, nation="GERMANY", fraction_inverse=10000):
    tensors, dictionaries = load(
        tables,
        {
            "partsupp": {"ps_partkey": "int", "ps_suppkey": "int", "ps_availqty": "int", "ps_supplycost": "cents"},
            "supplier": {"s_suppkey": "int", "s_nationkey": "int"},
            "nation": {"n_nationkey": "int", "n_name": "str"},
        },
    )
    scalars = {"nation": code_of(dictionaries["n_name"], nation), "fraction_inverse": fraction_inverse}
    return tensors, scalars, dictionaries


def _query_core(t, s):
    supplier, found = lookup(t["s_suppkey"], t["ps_suppkey"])
    nation, _ = lookup(t["n_nationkey"], t["s_nationkey"][supplier])
    keep = found & (t["n_name"][nation] == s["nation"])
    value = t["ps_supplycost"][keep] * t["ps_availqty"][keep]
    keys, ids = group(t["ps_partkey"][keep])
    sums = segment_sum(value, ids, len(keys))
    big = sums * s["fraction_inverse"] > value.sum()
    partkey, sums = keys[big, 0], sums[big]
    order = order_by([(sums, True)])
    return table(partkey[order], sums[order].double() / 100)


def run_query(tables, **params):
    """
    SELECT
        ps_partkey,
        sum(ps_supplycost * ps_availqty) AS value
    FROM
        partsupp,
        supplier,
        nation
    WHERE
        ps_suppkey = s_suppkey
        AND s_nationkey = n_nationkey
        AND n_name = 'GERMANY'
    GROUP BY
        ps_partkey
    HAVING
        sum(ps_supplycost * ps_availqty) > (
            SELECT
                sum(ps_supplycost * ps_availqty) * 0.0001000000
            FROM
                partsupp,
                supplier,
                nation
            WHERE
                ps_suppkey = s_suppkey
                AND s_nationkey = n_nationkey
                AND n_name = 'GERMANY')
    ORDER BY
        value DESC;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
