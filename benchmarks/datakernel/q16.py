"""TPC-H Q16, parts/supplier relationship: NOT IN becomes an anti join (`~torch.isin`) on the
complained-about suppliers, NOT LIKE a lookup table on the type dictionary, and COUNT(DISTINCT) the
size of each group's distinct (group, supplier) pairs."""

import torch

from _tpch import code_of, decode, group, like_table, load, lookup, order_by, segment_count, table

COLUMNS = (("p_brand", "str:p_brand"), ("p_type", "str:p_type"), ("p_size", "int"), ("supplier_cnt", "int"))


def extract(tables, brand="Brand#45", type_prefix="MEDIUM POLISHED", sizes=(49, 14, 23, 45, 19, 3, 36, 9)):
    tensors, dictionaries = load(
        tables,
        {
            "partsupp": {"ps_partkey": "int", "ps_suppkey": "int"},
            "part": {"p_partkey": "int", "p_brand": "str", "p_type": "str", "p_size": "int"},
            "supplier": {"s_suppkey": "int", "s_comment": "str"},
        },
    )
    tensors["p_type_like"] = like_table(dictionaries["p_type"], f"{type_prefix}%")
    tensors["s_comment_like"] = like_table(dictionaries["s_comment"], "%Customer%Complaints%")
    tensors["sizes"] = torch.tensor(sizes, dtype=torch.int64)
    return tensors, {"brand": code_of(dictionaries["p_brand"], brand)}, dictionaries


def _query_core(t, s):
    complained = t["s_suppkey"][t["s_comment_like"][t["s_comment"].long()]]
    part, found = lookup(t["p_partkey"], t["ps_partkey"])
    keep = (
        found
        & ~torch.isin(t["ps_suppkey"], complained)
        & (t["p_brand"][part] != s["brand"])
        & ~t["p_type_like"][t["p_type"][part].long()]
        & torch.isin(t["p_size"][part], t["sizes"])
    )
    part = part[keep]
    pairs, _ = group(t["p_brand"][part], t["p_type"][part], t["p_size"][part], t["ps_suppkey"][keep])
    keys, ids = group(pairs[:, 0], pairs[:, 1], pairs[:, 2])
    count = segment_count(ids, len(keys))
    order = order_by([(count, True), (keys[:, 0], False), (keys[:, 1], False), (keys[:, 2], False)])
    return table(keys[:, 0], keys[:, 1], keys[:, 2], count)[order]


def run_query(tables, **params):
    """
    SELECT
        p_brand,
        p_type,
        p_size,
        count(DISTINCT ps_suppkey) AS supplier_cnt
    FROM
        partsupp,
        part
    WHERE
        p_partkey = ps_partkey
        AND p_brand <> 'Brand#45'
        AND p_type NOT LIKE 'MEDIUM POLISHED%'
        AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9)
        AND ps_suppkey NOT IN (
            SELECT
                s_suppkey
            FROM
                supplier
            WHERE
                s_comment LIKE '%Customer%Complaints%')
    GROUP BY
        p_brand,
        p_type,
        p_size
    ORDER BY
        supplier_cnt DESC,
        p_brand,
        p_type,
        p_size;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
