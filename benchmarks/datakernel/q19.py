"""TPC-H Q19, discounted revenue: three OR-ed conjunctions over a line and its part (brand, container
set, quantity and size ranges), one masked sum. Streamable."""

import torch

from _tpch import code_of, decode, in_table, load, lookup, table

COLUMNS = (("revenue", "float"),)
STREAM = "lineitem"
PARTIAL_KEYS = 0
CONTAINERS = (
    ("SM CASE", "SM BOX", "SM PACK", "SM PKG"),
    ("MED BAG", "MED BOX", "MED PKG", "MED PACK"),
    ("LG CASE", "LG BOX", "LG PACK", "LG PKG"),
)


def extract(tables, brands=("Brand#12", "Brand#23", "Brand#34"), quantities=(1, 10, 20)):
    tensors, dictionaries = load(
        tables,
        {
            "lineitem": {
                "l_partkey": "int",
                "l_quantity": "float",
                "l_extendedprice": "float",
                "l_discount": "float",
                "l_shipmode": "str",
                "l_shipinstruct": "str",
            },
            "part": {"p_partkey": "int", "p_brand": "str", "p_size": "int", "p_container": "str"},
        },
    )
    for i, wanted in enumerate(CONTAINERS):
        tensors[f"p_container_in{i}"] = in_table(dictionaries["p_container"], wanted)
    tensors["l_shipmode_in"] = in_table(dictionaries["l_shipmode"], ("AIR", "AIR REG"))
    scalars = {"instruct": code_of(dictionaries["l_shipinstruct"], "DELIVER IN PERSON")}
    for i, (brand, quantity) in enumerate(zip(brands, quantities)):
        scalars[f"brand{i}"] = code_of(dictionaries["p_brand"], brand)
        scalars[f"quantity{i}"] = quantity
    return tensors, scalars, dictionaries


def _partial_core(t, s):
    part, found = lookup(t["p_partkey"], t["l_partkey"])
    brand, size, container = t["p_brand"][part], t["p_size"][part], t["p_container"][part].long()
    quantity = t["l_quantity"]
    common = found & t["l_shipmode_in"][t["l_shipmode"].long()] & (t["l_shipinstruct"] == s["instruct"])
    any_ = torch.zeros_like(common)
    for i, top in enumerate((5, 10, 15)):
        low = s[f"quantity{i}"]
        any_ |= (
            (brand == s[f"brand{i}"])
            & t[f"p_container_in{i}"][container]
            & (quantity >= low)
            & (quantity <= low + 10)
            & (size >= 1)
            & (size <= top)
        )
    keep = common & any_
    return table(torch.where(keep, t["l_extendedprice"] * (1 - t["l_discount"]), 0.0).sum())


def _final(p, t, s):
    return p


def _query_core(t, s):
    return _final(_partial_core(t, s), t, s)


def run_query(tables, **params):
    """
    SELECT
        sum(l_extendedprice * (1 - l_discount)) AS revenue
    FROM
        lineitem,
        part
    WHERE (p_partkey = l_partkey
        AND p_brand = 'Brand#12'
        AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
        AND l_quantity >= 1
        AND l_quantity <= 1 + 10
        AND p_size BETWEEN 1 AND 5
        AND l_shipmode IN ('AIR', 'AIR REG')
        AND l_shipinstruct = 'DELIVER IN PERSON')
        OR (p_partkey = l_partkey
            AND p_brand = 'Brand#23'
            AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
            AND l_quantity >= 10
            AND l_quantity <= 10 + 10
            AND p_size BETWEEN 1 AND 10
            AND l_shipmode IN ('AIR', 'AIR REG')
            AND l_shipinstruct = 'DELIVER IN PERSON')
        OR (p_partkey = l_partkey
            AND p_brand = 'Brand#34'
            AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
            AND l_quantity >= 20
            AND l_quantity <= 20 + 10
            AND p_size BETWEEN 1 AND 15
            AND l_shipmode IN ('AIR', 'AIR REG')
            AND l_shipinstruct = 'DELIVER IN PERSON');
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
