"""TPC-H Q7, volume shipping: supplier and customer nations looked up for every line, the two-way
nation pair condition, revenue per (supplier nation, customer nation, year). Streamable."""

from _tpch import code_of, day, decode, group, load, lookup, segment_sum, table, year_of

COLUMNS = (("supp_nation", "str:n_name"), ("cust_nation", "str:n_name"), ("l_year", "int"), ("revenue", "float"))
STREAM = "lineitem"
PARTIAL_KEYS = 3


def extract(tables, nation1="FRANCE", nation2="GERMANY", date="1995-01-01", end="1996-12-31"):
    tensors, dictionaries = load(
        tables,
        {
            "supplier": {"s_suppkey": "int", "s_nationkey": "int"},
            "lineitem": {
                "l_orderkey": "int",
                "l_suppkey": "int",
                "l_shipdate": "date",
                "l_extendedprice": "float",
                "l_discount": "float",
            },
            "orders": {"o_orderkey": "int", "o_custkey": "int"},
            "customer": {"c_custkey": "int", "c_nationkey": "int"},
            "nation": {"n_nationkey": "int", "n_name": "str"},
        },
    )
    names = dictionaries["n_name"]
    scalars = {
        "nation1": code_of(names, nation1),
        "nation2": code_of(names, nation2),
        "date": day(date),
        "end": day(end),
    }
    return tensors, scalars, dictionaries


def _partial_core(t, s):
    supplier, s_found = lookup(t["s_suppkey"], t["l_suppkey"])
    order, o_found = lookup(t["o_orderkey"], t["l_orderkey"])
    customer, c_found = lookup(t["c_custkey"], t["o_custkey"][order])
    supp_nation, _ = lookup(t["n_nationkey"], t["s_nationkey"][supplier])
    cust_nation, _ = lookup(t["n_nationkey"], t["c_nationkey"][customer])
    sn, cn = t["n_name"][supp_nation], t["n_name"][cust_nation]
    a, b = s["nation1"], s["nation2"]
    keep = (
        s_found
        & o_found
        & c_found
        & (((sn == a) & (cn == b)) | ((sn == b) & (cn == a)))
        & (t["l_shipdate"] >= s["date"])
        & (t["l_shipdate"] <= s["end"])
    )
    keys, ids = group(sn[keep], cn[keep], year_of(t["l_shipdate"][keep]))
    revenue = segment_sum(t["l_extendedprice"][keep] * (1 - t["l_discount"][keep]), ids, len(keys))
    return table(keys[:, 0], keys[:, 1], keys[:, 2], revenue)


def _final(p, t, s):
    return p


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        supp_nation,
        cust_nation,
        l_year,
        sum(volume) AS revenue
    FROM (
        SELECT
            n1.n_name AS supp_nation,
            n2.n_name AS cust_nation,
            extract(year FROM l_shipdate) AS l_year,
            l_extendedprice * (1 - l_discount) AS volume
        FROM
            supplier,
            lineitem,
            orders,
            customer,
            nation n1,
            nation n2
        WHERE
            s_suppkey = l_suppkey
            AND o_orderkey = l_orderkey
            AND c_custkey = o_custkey
            AND s_nationkey = n1.n_nationkey
            AND c_nationkey = n2.n_nationkey
            AND ((n1.n_name = 'FRANCE'
                    AND n2.n_name = 'GERMANY')
                OR (n1.n_name = 'GERMANY'
                    AND n2.n_name = 'FRANCE'))
            AND l_shipdate BETWEEN CAST('1995-01-01' AS date)
            AND CAST('1996-12-31' AS date)) AS shipping
    GROUP BY
        supp_nation,
        cust_nation,
        l_year
    ORDER BY
        supp_nation,
        cust_nation,
        l_year;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
