"""TPC-H Q22, global sales opportunity: the country code (a substring of the phone) is computed on the
strings while extracting and dictionary-encoded; the correlated average becomes one sum and count,
`acctbal > avg` decided exactly in cents as `acctbal * count > sum`; NOT EXISTS an anti join."""

import torch

from _tpch import decode, encode, group, in_table, load, segment_count, segment_sum, table

COLUMNS = (("cntrycode", "str:cntrycode"), ("numcust", "int"), ("totacctbal", "float"))


def extract(tables, codes=("13", "31", "23", "29", "30", "18", "17")):
    import pyarrow.compute as pc

    tensors, dictionaries = load(
        tables, {"customer": {"c_custkey": "int", "c_acctbal": "cents"}, "orders": {"o_custkey": "int"}}
    )
    phone = tables.read("customer", ["c_phone"]).column("c_phone")
    tensors["cntrycode"], dictionaries["cntrycode"] = encode(
        tables, "customer", "cntrycode", pc.utf8_slice_codeunits(phone, 0, 2)
    )
    tensors["cntrycode_in"] = in_table(dictionaries["cntrycode"], codes)
    return tensors, {}, dictionaries


def _query_core(t, s):
    chosen = t["cntrycode_in"][t["cntrycode"].long()]
    balance = t["c_acctbal"]
    positive = chosen & (balance > 0)
    total, count = balance[positive].sum(), positive.sum()
    keep = chosen & (balance * count > total) & ~torch.isin(t["c_custkey"], t["o_custkey"])
    keys, ids = group(t["cntrycode"][keep])
    return table(keys[:, 0], segment_count(ids, len(keys)), segment_sum(balance[keep], ids, len(keys)).double() / 100)


def run_query(tables, **params):
    """
    SELECT
        cntrycode,
        count(*) AS numcust,
        sum(c_acctbal) AS totacctbal
    FROM (
        SELECT
            substring(c_phone FROM 1 FOR 2) AS cntrycode,
            c_acctbal
        FROM
            customer
        WHERE
            substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17')
            AND c_acctbal > (
                SELECT
                    avg(c_acctbal)
                FROM
                    customer
                WHERE
                    c_acctbal > 0.00
                    AND substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17'))
                AND NOT EXISTS (
                    SELECT
                        *
                    FROM
                        orders
                    WHERE
                        o_custkey = c_custkey)) AS custsale
    GROUP BY
        cntrycode
    ORDER BY
        cntrycode;
    """
    tensors, scalars, dictionaries = extract(tables, **params)
    return decode(_query_core(tensors, scalars), COLUMNS, dictionaries)
