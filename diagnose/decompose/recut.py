"""Subgraphs cut again after the partition, as the search asks (`search.py`): two neighbours fused into
one (`fuse`), or one cut after its first op (`split_head`: an anchor and its epilogue apart).

Both keep the partition's rules: each part has one output, and size queries and free views are
computed again by each part that reads them. Names say where a part came from: `fused_sg2_sg4` covers
`sg2` to `sg4`; `sg3a_conv2d` and `sg3b_relu` are `sg3_conv2d`'s anchor and its epilogue.
"""

from __future__ import annotations

from dataclasses import replace

from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.partition import (
    Subgraph,
    is_fusable,
    recomputed,
    subgraph,
    users_through_queries,
    values_read_outside,
    with_size_queries,
)


def fuse(first: Subgraph, second: Subgraph, records: tuple[NodeRecord, ...]) -> Subgraph | None:
    """`first` and `second` as one subgraph (named `fused_<first's sg>_<second's sg>`), where `second`
    reads `first`'s output and nothing outside the two does, so the fused one still has one output;
    None otherwise. The fused subgraph runs where `first` ran."""
    if first.output not in second.inputs:
        return None
    by_name, queries, order, inputs_of, users = read(records)
    nodes = sorted(set(first.nodes) | set(second.nodes), key=order.__getitem__)
    if values_read_outside(nodes, by_name, users, queries) != [second.output]:
        return None
    merged = subgraph(0, nodes, by_name, users, queries)
    return replace(merged, name=f"fused_{span(first.name)[0]}_{span(second.name)[1]}")


def span(name: str) -> tuple[str, str]:
    """The first and last of the partition's subgraphs a subgraph covers: `sg2_relu` -> (sg2, sg2),
    `fused_sg2_sg4` -> (sg2, sg4)."""
    if name.startswith("fused_"):
        _, first, last = name.split("_")
        return first, last
    return name.split("_")[0], name.split("_")[0]


def split_head(sg: Subgraph, records: tuple[NodeRecord, ...]) -> tuple[Subgraph, Subgraph] | None:
    """`sg` cut after its first op where that op is an anchor (a conv, a linear, a norm) with elementwise
    ops after it: the anchor alone (`sg3a_conv2d`) and its epilogue (`sg3b_relu`), which reads the
    anchor's output and gives `sg`'s. None where `sg` is a fused pair, starts with an elementwise op,
    has nothing after its anchor, or the anchor's value is not the only one the epilogue takes from it
    (an opaque value, the pair `torch.max(x, dim)` gives, stays with the op that reads it)."""
    if sg.name.startswith("fused_"):
        return None
    by_name, queries, order, inputs_of, users = read(records)
    compute = [n for n in sg.nodes if n not in queries]
    if len(compute) < 2 or is_fusable(by_name[compute[0]]):
        return None
    anchor = compute[0]
    head_nodes = with_size_queries([anchor], queries, inputs_of, order)
    tail_nodes = with_size_queries(compute[1:], queries, inputs_of, order)
    if values_read_outside(head_nodes, by_name, users, queries) != [anchor]:
        return None
    head, tail = subgraph(0, head_nodes, by_name, users, queries), subgraph(0, tail_nodes, by_name, users, queries)
    if tail.output != sg.output or anchor not in tail.inputs:
        return None
    index = sg.name.split("_")[0]  # subgraph(0, ...) names its parts `sg0_<op>`: the op kept, the index ours
    return (
        replace(head, name=f"{index}a_{head.name.split('_', 1)[1]}"),
        replace(tail, name=f"{index}b_{tail.name.split('_', 1)[1]}"),
    )


def read(
    records: tuple[NodeRecord, ...],
) -> tuple[dict[str, NodeRecord], frozenset[str], dict[str, int], dict[str, tuple[str, ...]], dict[str, list[str]]]:
    """What both cuts read off the graph: nodes by name, the recomputed values (size queries, free views),
    the nodes' order and inputs, and each node's readers (`users_through_queries`)."""
    queries = recomputed(records)
    inputs_of = {r.name: r.inputs for r in records}
    return (
        {r.name: r for r in records},
        queries,
        {r.name: i for i, r in enumerate(records)},
        inputs_of,
        users_through_queries(records, queries, inputs_of),
    )
