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
- Each group has one output. A group with several values used outside it is split after the first
  such value, and again until each part has one.

Groups are named `sg<i>_<op of their first node>` (`sg0_conv2d`) in the order they run.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.decompose.graph import NodeRecord

ELEMENTWISE = frozenset({
    # modules (lowercased class names)
    "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "leakyrelu",
    "elu", "selu", "celu", "mish", "softplus", "softsign", "tanhshrink", "dropout", "identity",
    # functions and methods
    "add", "sub", "mul", "truediv", "div", "floordiv", "neg", "pow", "exp", "log", "sqrt", "rsqrt", "abs",
    "clamp", "clamp_min", "clamp_max", "clip", "minimum", "maximum", "where", "erf", "sin", "cos",
    "leaky_relu", "hardswish", "relu_", "contiguous", "to", "float", "half", "type_as",
    # views and shape queries
    "view", "reshape", "flatten", "transpose", "permute", "unsqueeze", "squeeze", "expand", "size",
    "getitem", "t",
})


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
        return Subgraph(data["name"], tuple(data["nodes"]), tuple(data["inputs"]), tuple(data["params"]),
                        data["output"])


def is_fusable(node: NodeRecord) -> bool:
    return node.opname in ELEMENTWISE


def opaque_value(node: NodeRecord) -> bool:
    """Neither a tensor nor a number: a value a subgraph's task cannot take as an input."""
    return not node.is_tensor and node.literal is None


def partition(records: tuple[NodeRecord, ...]) -> tuple[Subgraph, ...]:
    """The subgraphs of a recorded graph, in the order they run."""
    by_name = {r.name: r for r in records}
    compute = [r for r in records if r.op.startswith("call_")]
    group_of: dict[str, int] = {}
    groups: list[list[str]] = []
    for node in compute:
        sources = {group_of.get(i) for i in node.inputs if by_name[i].op not in ("get_attr",)}
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
    users: dict[str, list[str]] = {r.name: [] for r in records}
    for r in records:
        for i in r.inputs:
            users[i].append(r.name)
    order = {r.name: i for i, r in enumerate(records)}
    parts = sorted((p for g in groups for p in split(g, users)), key=lambda p: order[p[0]])
    return tuple(subgraph(i, p, by_name, users) for i, p in enumerate(parts))


def split(nodes: list[str], users: dict[str, list[str]]) -> list[list[str]]:
    """`nodes` cut after each value used outside them but the last, so that each part has one output."""
    inside = set(nodes)
    escaping = [n for n in nodes if any(u not in inside for u in users[n])]
    if len(escaping) <= 1:
        return [nodes]
    cut = nodes.index(escaping[0]) + 1
    return [nodes[:cut], *split(nodes[cut:], users)]


def subgraph(index: int, nodes: list[str], by_name: dict[str, NodeRecord],
             users: dict[str, list[str]]) -> Subgraph:
    inside = set(nodes)
    reads = [i for n in nodes for i in by_name[n].inputs if i not in inside]
    params = tuple(dict.fromkeys(i for i in reads if by_name[i].op == "get_attr"))
    inputs = tuple(dict.fromkeys(i for i in reads if by_name[i].op != "get_attr"))
    escaping = [n for n in nodes if any(u not in inside for u in users[n])]
    output = escaping[0] if escaping else nodes[-1]
    return Subgraph(f"sg{index}_{by_name[nodes[0]].opname}", tuple(nodes), inputs, params, output)
