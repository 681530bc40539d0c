"""TPC-H Q2, minimum cost supplier: the correlated `min(ps_supplycost)` per part becomes a per-part
minimum over the European suppliers' offers (`scatter_reduce` amin), then an equality filter."""

import torch

from _tpch import code_of, decode, like_table, load, lookup, order_by, table

COLUMNS = (
    ("s_acctbal", "float"),
    ("s_name", "str:s_name"),
    ("n_name", "str:n_name"),
    ("p_partkey", "int"),
    ("p_mfgr", "str:p_mfgr"),
    ("s_address", "str:s_address"),
    ("s_phone", "str:s_phone"),
    ("s_comment", "str:s_comment"),
)


def extract(tables, size=15, type_suffix="BRASS", region="EUROPE"):
    tensors, dictionaries = load(
        tables,
        {
            "part": {"p_partkey": "int", "p_mfgr": "str", "p_size": "int", "p_type": "str"},
            "supplier": {
                "s_suppkey": "int",
                "s_name": "str",
                "s_address": "str",
                "s_nationkey": "int",
                "s_phone": "str",
                "s_acctbal": "float",
                "s_comment": "str",
            },
            "partsupp": {"ps_partkey": "int", "ps_suppkey": "int", "ps_supplycost": "float"},
            "nation": {"n_nationkey": "int", "n_name": "str", "n_regionkey": "int"},
            "region": {"r_regionkey": "int", "r_name": "str"},
        },
    )
    tensors["p_type_like"] = like_table(dictionaries["p_type"], f"%{type_suffix}")
    return tensors, {"size": size, "region": code_of(dictionaries["r_name"], region)}, dictionaries


def _query_core(t, s):
    regions = t["r_regionkey"][t["r_name"] == s["region"]]
    nation, _ = lookup(t["n_nationkey"], t["s_nationkey"])
    supplier_in = torch.isin(t["n_regionkey"][nation], regions)
    supplier, found = lookup(t["s_suppkey"], t["ps_suppkey"])
    offer = found & supplier_in[supplier]
    part, part_found = lookup(t["p_partkey"], t["ps_partkey"])
    offer &= part_found
    cost = t["ps_supplycost"]
    best = torch.full((len(t["p_partkey"]),), float("inf"), dtype=torch.float64, device=cost.device)
    best = best.scatter_reduce(0, part[offer], cost[offer], reduce="amin")
    part_ok = (t["p_size"] == s["size"]) & t["p_type_like"][t["p_type"].long()]
    rows = offer & part_ok[part] & (cost == best[part])
    sup, prt = supplier[rows], part[rows]
    nat = nation[sup]
    acctbal, s_name, n_name, partkey = t["s_acctbal"][sup], t["s_name"][sup], t["n_name"][nat], t["p_partkey"][prt]
    order = order_by([(acctbal, True), (n_name, False), (s_name, False), (partkey, False)])[:100]
    return table(
        acctbal, s_name, n_name, partkey, t["p_mfgr"][prt], t["s_address"][sup], t["s_phone"][sup], t["s_comment"][sup]
    )[order]


def run_query(tables, **params):
    """
    SELECT
        s_acctbal,
        s_name,
        n_name,
        p_partkey,
        p_mfgr,
        s_address,
        s_phone,
        s_comment
    FROM
        part,
        supplier,
        partsupp,
        nation,
        region
    WHERE
        p_partkey = ps_partkey
        AND s_suppkey = ps_suppkey
        AND p_size = 15
        AND p_type LIKE '%BRASS'
        AND s_nationkey = n_nationkey
        AND n_regionkey = r_regionkey
        AND r_name = 'EUROPE'
        AND ps_supplycost = (
            SELECT
                min(ps_supplycost)
            FROM
                partsupp,
                supplier,
                nation,
                region
            WHERE
                p_partkey = ps_partkey
                AND s_suppkey = ps_suppkey
                AND s_nationkey = n_nationkey
                AND n_regionkey = r_regionkey
                AND r_name = 'EUROPE')
    ORDER BY
        s_acctbal DESC,
        n_name,
        s_name,
        p_partkey
    LIMIT 100;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
