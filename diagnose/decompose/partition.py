"""The graph cut into subgraphs, Inductor-style: an anchor op starts a group, and the elementwise ops
that follow fuse into it as its epilogue.

- An anchor is a heavy op: a convolution, linear or norm layer (module or function), a matmul, a
  softmax or a reduction, or any op this module does not know (it stands alone, never fused into).
- An elementwise or view op (activations, arithmetic, `view`/`transpose`) joins the group that
  produces every node it reads (parameters and constants aside): `conv -> add bias -> relu` is one
  group. One that reads no group's output alone (a residual add of two groups, an op on a model
  input) starts a group of its own, which later elementwise ops may join.
- An op reading a value that is neither a tensor nor a number (`x.device`, the pair `torch.max(x,
  dim)` returns) joins the group that makes it: no task could be handed that value.
- A size query (`x.shape`, `x.size(0)`, `h * w` of those: a number) belongs to no group: each part
  that reads one computes it again from the tensor it asks about, so `B, C, H, W = x.shape` makes no
  subgraphs of its own and no part hands another a number.
- So does a view (`view`, `transpose`, `split` and the pieces taken from it, ...) of one tensor, when
  the model does not return it: it is no work, so each part that reads it views the whole tensor again.
  An attention's `q, k, v = qkv.split(...)` and `.view(B, T, nh, hs).transpose(1, 2)` then belong to
  the matmul that reads them, which gets `qkv` itself (before: seven subgraphs of views alone in a GPT
  block, each one a task to verify and none with work to speed up).
- Each group has one output. A group with several values used outside it is split after the first
  such value, and again until each part has one; a value no task can take is computed again by each
  part that reads it (`q, k, v = x.split(n, dim=2)`, each going its own way). Parts run in an order
  that gives each the outputs it reads.

Groups are named `sg<i>_<op of their first node>` (`sg0_conv2d`) in the order they run.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.decompose.graph import NodeRecord

# fmt: off
ELEMENTWISE = frozenset({
    # modules (lowercased class names)
    "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "leakyrelu",
    "elu", "selu", "celu", "mish", "softplus", "softsign", "tanhshrink", "dropout", "identity",
    # functions and methods
    "add", "sub", "mul", "truediv", "div", "floordiv", "neg", "pow", "exp", "log", "sqrt", "rsqrt", "abs",
    "clamp", "clamp_min", "clamp_max", "clip", "minimum", "maximum", "where", "erf", "sin", "cos",
    "leaky_relu", "hardswish", "relu_", "contiguous", "to", "float", "half", "type_as",
    # copies and identities (`x.clone().detach()` to keep a residual): no work of their own to stand alone
    "clone", "detach", "alias",
    # views and shape queries
    "view", "reshape", "flatten", "transpose", "permute", "unsqueeze", "squeeze", "expand", "size",
    "getitem", "t",
})
# fmt: on


@dataclass(frozen=True)
class Subgraph:
    """One group: its nodes in order, the values it reads from outside (model inputs, other groups'
    outputs), the parameters it reads (`get_attr`), and its one output."""

    name: str
    nodes: tuple[str, ...]
    inputs: tuple[str, ...]
    params: tuple[str, ...]
    output: str

    @staticmethod
    def from_dict(data: dict) -> "Subgraph":
        return Subgraph(
            data["name"], tuple(data["nodes"]), tuple(data["inputs"]), tuple(data["params"]), data["output"]
        )


# Ops that, on numbers or a tensor's shape, give a number: cheap to compute again wherever read.
SIZE_QUERIES = frozenset({"getattr", "size", "dim", "numel", "getitem", "mul", "add", "sub", "floordiv", "truediv",
                          "mod", "neg", "int", "len",
                          # `math.sqrt(k.size(-1))`, an attention's scale, as fx wraps it
                          "sqrt", "pow", "floor", "ceil"})  # fmt: skip


# Views of one tensor: no work, only another way to read it. `getitem` of a tensor with numbers is a
# slice (a tensor index makes it a gather: a second tensor input, not a view).
VIEWS = frozenset({"view", "reshape", "flatten", "unflatten", "transpose", "permute", "unsqueeze", "squeeze",
                   "expand", "t", "split", "chunk", "unbind", "getitem", "narrow", "select"})  # fmt: skip
# Views that give a tuple of tensors, no tensor itself: only their pieces are read.
TUPLE_VIEWS = frozenset({"split", "chunk", "unbind"})


def is_fusable(node: NodeRecord) -> bool:
    return node.opname in ELEMENTWISE


def opaque_value(node: NodeRecord) -> bool:
    """Neither a tensor nor a number: a value a subgraph's task cannot take as an input."""
    return not node.is_tensor and node.literal is None


def size_queries(records: tuple[NodeRecord, ...]) -> frozenset[str]:
    """The nodes that give a number from shapes and other numbers (not one the model returns)."""
    returned = {i for r in records if r.op == "output" for i in r.inputs}
    found: set[str] = set()
    by_name = {r.name: r for r in records}
    for r in records:
        if (
            r.op.startswith("call_")
            and not r.is_tensor
            and r.literal is not None
            and r.opname in SIZE_QUERIES
            and r.name not in returned
            and all(by_name[i].is_tensor or i in found or by_name[i].op == "get_attr" for i in r.inputs)
        ):
            found.add(r.name)
    return frozenset(found)


def free_views(records: tuple[NodeRecord, ...], queries: frozenset[str]) -> frozenset[str]:
    """The views that belong to no group (not returned by the model): each reads one tensor (a model
    input, a parameter, a node's output or another such view) and otherwise numbers only.

    Not one whose numbers ask about a tensor its own tensor is made from by elementwise ops and views
    alone (ShuffleNet's `x.view(b, c, h, w)` after `x = x.transpose(1, 2).contiguous()`, the sizes
    taken from the norm before): both sit in one group, and the part viewing again would need the
    earlier tensor for its size, splitting that group in two."""
    returned = {i for r in records if r.op == "output" for i in r.inputs}
    by_name = {r.name: r for r in records}
    found: set[str] = set()
    for r in records:
        if not (r.op.startswith("call_") and r.opname in VIEWS and r.name not in returned and r.name not in queries):
            continue
        viewed = [i for i in r.inputs if i not in queries]
        if len(viewed) != 1 or not (r.is_tensor or r.opname in TUPLE_VIEWS):
            continue
        source = by_name[viewed[0]]
        if not (source.name in found or source.op == "get_attr" or source.is_tensor):
            continue
        root = source.name
        while root in found:  # the tensor the chain of views starts from: what a part is handed
            root = next(i for i in by_name[root].inputs if i not in queries)
        asked = asked_about([i for i in r.inputs if i in queries], by_name, queries) - {root}
        if not asked & made_by_fusable_from(root, by_name, queries | found):
            found.add(r.name)
    return frozenset(found)


def asked_about(numbers: list[str], by_name: dict[str, NodeRecord], queries: frozenset[str]) -> set[str]:
    """The tensors the size queries `numbers` take their sizes from."""
    tensors, waiting = set(), list(numbers)
    while waiting:
        record = by_name[waiting.pop()]
        for i in record.inputs:
            if i in queries:
                waiting.append(i)
            elif by_name[i].is_tensor:
                tensors.add(i)
    return tensors


def made_by_fusable_from(name: str, by_name: dict[str, NodeRecord], through: frozenset[str] | set[str]) -> set[str]:
    """`name` and the tensors it is made from by elementwise ops and views alone (back to an anchor, which
    is counted and not gone past)."""
    seen, waiting = set(), [name]
    while waiting:
        current = waiting.pop()
        if current in seen:
            continue
        seen.add(current)
        record = by_name[current]
        if current in through or is_fusable(record):
            waiting += [i for i in record.inputs if by_name[i].is_tensor or i in through]
    return seen


def recomputed(records: tuple[NodeRecord, ...]) -> frozenset[str]:
    """What no group holds and each part that reads it computes again: size queries and free views."""
    queries = size_queries(records)
    return queries | free_views(records, queries)


def with_size_queries(
    part: list[str], queries: frozenset[str], inputs_of: dict[str, tuple[str, ...]], order: dict[str, int]
) -> list[str]:
    """`part` with the size queries it reads, and those they read, put back before their first use."""
    needed, waiting = set(), [i for n in part for i in inputs_of[n] if i in queries]
    while waiting:
        name = waiting.pop()
        if name not in needed:
            needed.add(name)
            waiting += [i for i in inputs_of[name] if i in queries]
    return sorted(set(part) | needed, key=order.__getitem__)


def users_through_queries(
    records: tuple[NodeRecord, ...], queries: frozenset[str], inputs_of: dict[str, tuple[str, ...]]
) -> dict[str, list[str]]:
    """Each node's readers, a size query's reader counted as a reader of the tensors the query asks
    about (the part holding that reader computes the query again from them)."""
    users: dict[str, list[str]] = {r.name: [] for r in records}
    for r in records:
        if r.name in queries:
            continue
        read, waiting = set(), list(r.inputs)
        while waiting:
            name = waiting.pop()
            if name in queries:
                waiting += inputs_of[name]
            elif name not in read:
                read.add(name)
                users[name].append(r.name)
    return users


def partition(records: tuple[NodeRecord, ...]) -> tuple[Subgraph, ...]:
    """The subgraphs of a recorded graph, in the order they run."""
    by_name = {r.name: r for r in records}
    numbers = size_queries(records)
    queries = recomputed(records)
    compute = [r for r in records if r.op.startswith("call_") and r.name not in queries]
    group_of: dict[str, int] = {}
    groups: list[list[str]] = []

    def viewed(name: str) -> list[str]:
        """The tensor a value is, seen through the free views that lead to it."""
        return [s for i in by_name[name].inputs if i not in numbers for s in viewed(i)] if name in queries else [name]

    for node in compute:
        reads = [s for i in node.inputs if i not in numbers for s in viewed(i)]
        sources = {group_of.get(i) for i in reads if by_name[i].op != "get_attr"}
        # a value no task can be handed (`x.device`, the (values, indices) of `torch.max(x, dim)`) keeps
        # the ops that read it in the group that makes it
        opaque = [group_of[i] for i in node.inputs if i in group_of and opaque_value(by_name[i])]
        if opaque:
            home = max(opaque)
        elif is_fusable(node) and len(sources) == 1 and None not in sources:
            home = sources.pop()
        else:
            home = len(groups)
            groups.append([])
        groups[home].append(node.name)
        group_of[node.name] = home
    order = {r.name: i for i, r in enumerate(records)}
    inputs_of = {r.name: r.inputs for r in records}
    users = users_through_queries(records, queries, inputs_of)
    opaque = frozenset(r.name for r in records if opaque_value(r))
    parts = [with_size_queries(p, queries, inputs_of, order) for g in groups for p in split(g, users, opaque)]
    parts = run_order(parts, order, inputs_of, opaque | queries)
    return tuple(subgraph(i, p, by_name, users, queries) for i, p in enumerate(parts))


def split(nodes: list[str], users: dict[str, list[str]], opaque: frozenset[str] = frozenset()) -> list[list[str]]:
    """`nodes` cut after each value used outside them but the last, so that each part has one output. The
    first part is cut again too: a value it makes for the rest of the group escapes it once they part.
    A value in `opaque` (no task can take it: the tuple `x.split(n)` returns) is never an output: a part
    that reads it computes it again (`q, k, v = x.split(...)`: each part starts from the split)."""
    inside = set(nodes)
    escaping = [n for n in nodes if n not in opaque and any(u not in inside for u in users[n])]
    if len(escaping) <= 1:
        return [nodes]
    cut = nodes.index(escaping[0]) + 1
    head, rest = nodes[:cut], nodes[cut:]
    again = [n for n in head if n in opaque and any(u in rest for u in users[n])]
    return [*split(head, users, opaque), *split(again + rest, users, opaque)]


def run_order(
    parts: list[list[str]], order: dict[str, int], inputs_of: dict[str, tuple[str, ...]], opaque: frozenset[str]
) -> list[list[str]]:
    """The parts in an order that runs: each after the parts whose outputs it reads (a part that computes
    an opaque value again starts with an early node, so the node order alone is not enough)."""
    made = {n: i for i, p in enumerate(parts) for n in p if n not in opaque}
    needs = [{made[u] for n in p for u in inputs_of[n] if u in made and made[u] != i} for i, p in enumerate(parts)]
    done: list[int] = []
    while len(done) < len(parts):
        ready = [i for i in range(len(parts)) if i not in done and needs[i] <= set(done)]
        if not ready:
            raise ValueError("the subgraphs depend on each other in a cycle")
        done.append(
            min(
                ready,
                key=lambda i: min(
                    (order[n] for n in parts[i] if n not in opaque), default=min(order[n] for n in parts[i])
                ),
            )
        )
    return [parts[i] for i in done]


def subgraph(
    index: int,
    nodes: list[str],
    by_name: dict[str, NodeRecord],
    users: dict[str, list[str]],
    queries: frozenset[str] = frozenset(),
) -> Subgraph:
    inside = set(nodes)
    first = next(n for n in nodes if n not in queries)
    reads = [i for n in nodes for i in by_name[n].inputs if i not in inside]
    params = tuple(dict.fromkeys(i for i in reads if by_name[i].op == "get_attr"))
    inputs = tuple(dict.fromkeys(i for i in reads if by_name[i].op != "get_attr"))
    escaping = values_read_outside(nodes, by_name, users, queries)
    output = escaping[0] if escaping else nodes[-1]
    return Subgraph(f"sg{index}_{by_name[first].opname}", tuple(nodes), inputs, params, output)


def values_read_outside(
    nodes: list[str], by_name: dict[str, NodeRecord], users: dict[str, list[str]], queries: frozenset[str]
) -> list[str]:
    """The values of `nodes` read outside them that a part could hand on (no opaque value, no size query)."""
    inside = set(nodes)
    return [
        n for n in nodes if not opaque_value(by_name[n]) and n not in queries and any(u not in inside for u in users[n])
    ]
