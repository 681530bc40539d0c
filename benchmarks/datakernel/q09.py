"""TPC-H Q9, product type profit: parts matched by LIKE on the name dictionary, partsupp joined on
the composite (part, supplier) key, profit per (nation, year). Streamable."""

from _tpch import composite, decode, group, like_table, load, lookup, order_by, segment_sum, table, year_of

COLUMNS = (("nation", "str:n_name"), ("o_year", "int"), ("sum_profit", "float"))
STREAM = "lineitem"
PARTIAL_KEYS = 2


def extract(tables, color="green"):
    tensors, dictionaries = load(
        tables,
        {
            "part": {"p_partkey": "int", "p_name": "str"},
            "supplier": {"s_suppkey": "int", "s_nationkey": "int"},
            "lineitem": {
                "l_orderkey": "int",
                "l_partkey": "int",
                "l_suppkey": "int",
                "l_quantity": "float",
                "l_extendedprice": "float",
                "l_discount": "float",
            },
            "partsupp": {"ps_partkey": "int", "ps_suppkey": "int", "ps_supplycost": "float"},
            "orders": {"o_orderkey": "int", "o_orderdate": "date"},
            "nation": {"n_nationkey": "int", "n_name": "str"},
        },
    )
    tensors["p_name_like"] = like_table(dictionaries["p_name"], f"%{color}%")
    return tensors, {}, dictionaries


def _partial_core(t, s):
    part, p_found = lookup(t["p_partkey"], t["l_partkey"])
    keep = p_found & t["p_name_like"][t["p_name"][part].long()]
    offer, ps_found = lookup(composite(t["ps_partkey"], t["ps_suppkey"]), composite(t["l_partkey"], t["l_suppkey"]))
    supplier, s_found = lookup(t["s_suppkey"], t["l_suppkey"])
    order, o_found = lookup(t["o_orderkey"], t["l_orderkey"])
    keep &= ps_found & s_found & o_found
    nation, _ = lookup(t["n_nationkey"], t["s_nationkey"][supplier[keep]])
    amount = (
        t["l_extendedprice"][keep] * (1 - t["l_discount"][keep])
        - t["ps_supplycost"][offer[keep]] * t["l_quantity"][keep]
    )
    keys, ids = group(t["n_name"][nation], year_of(t["o_orderdate"][order[keep]]))
    return table(keys[:, 0], keys[:, 1], segment_sum(amount, ids, len(keys)))


def _final(p, t, s):
    return p[order_by([(p[:, 0], False), (p[:, 1], True)])]


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        nation,
        o_year,
        sum(amount) AS sum_profit
    FROM (
        SELECT
            n_name AS nation,
            extract(year FROM o_orderdate) AS o_year,
            l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
        FROM
            part,
            supplier,
            lineitem,
            partsupp,
            orders,
            nation
        WHERE
            s_suppkey = l_suppkey
            AND ps_suppkey = l_suppkey
            AND ps_partkey = l_partkey
            AND p_partkey = l_partkey
            AND o_orderkey = l_orderkey
            AND s_nationkey = n_nationkey
            AND p_name LIKE '%green%') AS profit
    GROUP BY
        nation,
        o_year
    ORDER BY
        nation,
        o_year DESC;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
