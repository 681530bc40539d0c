"""TPC-H Q13, customer distribution: the LEFT OUTER JOIN's count per customer is a `bincount` over
the customer rows (customers without orders count 0), then a histogram of those counts."""

import torch

from _tpch import decode, like_table, load, lookup, order_by, table

COLUMNS = (("c_count", "int"), ("custdist", "int"))


def extract(tables, word1="special", word2="requests"):
    tensors, dictionaries = load(
        tables, {"customer": {"c_custkey": "int"}, "orders": {"o_custkey": "int", "o_comment": "str"}}
    )
    tensors["o_comment_like"] = like_table(dictionaries["o_comment"], f"%{word1}%{word2}%")
    return tensors, {}, dictionaries


def _query_core(t, s):
    customer, found = lookup(t["c_custkey"], t["o_custkey"])
    keep = found & ~t["o_comment_like"][t["o_comment"].long()]
    per_customer = torch.bincount(customer[keep], minlength=len(t["c_custkey"]))
    custdist = torch.bincount(per_customer)
    c_count = torch.nonzero(custdist).reshape(-1)
    custdist = custdist[c_count]
    order = order_by([(custdist, True), (c_count, True)])
    return table(c_count[order], custdist[order])


def run_query(tables, **params):
    """
    SELECT
        c_count,
        count(*) AS custdist
    FROM (
        SELECT
            c_custkey,
            count(o_orderkey)
        FROM
            customer
        LEFT OUTER JOIN orders ON c_custkey = o_custkey
        AND o_comment NOT LIKE '%special%requests%'
    GROUP BY
        c_custkey) AS c_orders (c_custkey,
            c_count)
    GROUP BY
        c_count
    ORDER BY
        custdist DESC,
        c_count DESC;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
