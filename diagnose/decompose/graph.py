"""The model's graph: `Model(*get_init_inputs())` traced with `torch.fx.symbolic_trace` (or, where that
fails, with meta tensors of the inputs' shapes: `trace`), one forward on
`get_inputs()` recording each node's output shape and dtype.

Worker side (`trace`, `record`): it builds and runs the user's model. The records are plain data
(`NodeRecord`) so that partitioning (`diagnose/decompose/partition.py`) runs anywhere, torch or not.
A node whose value is not a tensor (`x.size(0)`) keeps that value (`literal`) when it is a number or
a tuple of numbers: a subgraph that takes it as an input gets it as a constant.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeRecord:
    """One fx node: its op (`placeholder`, `get_attr`, `call_module`, `call_function`, `call_method`,
    `output`), a short op name (`conv2d`, `relu`, `add`), the nodes it reads, and what it produced."""

    name: str
    op: str
    opname: str
    inputs: tuple[str, ...]
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    literal: object = None

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None

    @staticmethod
    def from_dict(data: dict) -> "NodeRecord":
        shape = data.get("shape")
        literal = data.get("literal")
        return NodeRecord(
            data["name"],
            data["op"],
            data["opname"],
            tuple(data["inputs"]),
            tuple(shape) if shape is not None else None,
            data.get("dtype"),
            tuple(literal) if isinstance(literal, list) else literal,
        )


def opname(node, root) -> str:
    """A short lowercase name for what `node` does: the module's class, the function's or method's name."""
    if node.op == "call_module":
        return type(root.get_submodule(node.target)).__name__.lower()
    if node.op == "call_function":
        return getattr(node.target, "__name__", str(node.target)).strip("_").lower()
    if node.op == "call_method":
        return str(node.target).strip("_").lower()
    return node.op


def trace(model, inputs: list | None = None):
    """`model` traced by torch.fx; a model fx cannot trace is a `ValueError` with fx's reason in one line.

    Symbolic tracing first (sizes stay symbolic). Where it fails and `inputs` are given, the forward is
    traced again with meta tensors of the inputs' shapes (`torch.fx.experimental.meta_tracer`): sizes the
    forward reads become those of `inputs`. That is what attention blocks as GPT implementations write
    them need (`B, T, C = x.size()`, a causal-mask buffer sliced `[:, :, :T, :T]`, `math.sqrt(k.size(-1))`:
    a symbolic size cannot index a tensor or go through `math`); the graph then holds for the task's input
    shapes only, which every verification of the task uses."""
    import torch.fx  # deferred: torch is heavy

    try:
        with attributes_kept(model):
            graph = torch.fx.Tracer().trace(model)
        return torch.fx.GraphModule(model, graph)
    except Exception as exc:  # noqa: BLE001 - any tracing failure is the model's, said in one line
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        failure = ValueError(f"torch.fx cannot trace this model ({type(exc).__name__}: {reason})")
    if inputs is None:
        raise failure
    try:
        return meta_trace(model, inputs)
    except Exception:  # noqa: BLE001 - the symbolic tracer's reason is the one to give
        raise failure from None


@contextlib.contextmanager
def attributes_kept(model):
    """The model's attributes as they were before tracing: a forward that keeps state on the module
    (`self.hidden = self.tanh(...)`, an RNN cell) would leave a tracer's proxy there, which the graph
    module (built after this) would take as the value of `self.hidden`."""
    import torch.fx  # deferred: torch is heavy

    saved = [(module, dict(vars(module))) for module in model.modules()]
    try:
        yield
    finally:
        for module, attributes in saved:
            now = vars(module)
            # what the tracer added (`_tensor_constant0`) stays; a proxy the forward left goes
            for name in [n for n, v in now.items() if n not in attributes and isinstance(v, torch.fx.Proxy)]:
                del now[name]
            now.update(attributes)


def meta_trace(model, inputs: list):
    """`model` traced with meta tensors shaped as `inputs` (sizes read in the forward become constants)."""
    import torch  # deferred: torch is heavy
    from torch.fx.experimental.meta_tracer import MetaProxy, MetaTracer  # deferred: torch is heavy

    names = list(inspect.signature(model.forward).parameters)
    if len(inputs) > len(names):
        raise ValueError("more inputs than forward parameters")
    meta = {n: x.to("meta") for n, x in zip(names, inputs) if isinstance(x, torch.Tensor)}
    concrete = {n: x for n, x in zip(names, inputs) if not isinstance(x, torch.Tensor)}
    with warnings.catch_warnings(), attributes_kept(model):
        warnings.simplefilter("ignore")  # ops with no meta kernel: their sizes stay symbolic, said per op
        graph = MetaTracer().trace(model, meta_args=meta, concrete_args=concrete or None)
    leaves: list = []
    torch.fx.node.map_aggregate(next(n for n in graph.nodes if n.op == "output").args, leaves.append)
    if any(isinstance(v, MetaProxy) for v in leaves):  # state kept on the module across calls (an RNN's hidden)
        raise ValueError("the traced forward returns a tracer object")
    return torch.fx.GraphModule(model, graph)


def refuse_state_writes(graph_module) -> None:
    """A `ValueError` where the forward writes in place into the model's own state (a parameter,
    buffer or tensor attribute: `self.hidden.copy_(h0)`, `self.steps.add_(1)`): each subgraph task
    holds its own copy of the values it reads, so a later subgraph would read the state as it was
    when the model was cut, not as the write left it."""
    for node in graph_module.graph.nodes:
        if node.op not in ("call_method", "call_function") or not node.args:
            continue
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
        first = node.args[0]
        if (
            isinstance(name, str)
            and name.endswith("_")
            and not name.endswith("__")
            and getattr(first, "op", None) == "get_attr"
        ):
            raise ValueError(
                f"the forward writes into the model's state in place ({first.target}.{name}(...)): "
                "subgraph tasks cannot share that state"
            )


def record(graph_module, inputs: list) -> tuple[NodeRecord, ...]:
    """Run one forward under an fx Interpreter, recording each node's output shape and dtype: on the
    `meta` device first (shapes without memory: KernelBench level 2's activations reach 8 GiB on a CPU
    at their real sizes), on the given inputs where an op has no meta implementation."""
    import torch  # deferred: torch is heavy

    try:
        meta = copy.deepcopy(graph_module, memo=meta_memo(graph_module))
        on_meta = [torch.empty_like(x, device="meta") if isinstance(x, torch.Tensor) else x for x in inputs]
        return recorded(meta, on_meta)
    except (NotImplementedError, RuntimeError, TypeError):  # an op with no meta kernel, or one reading data
        return recorded(graph_module, inputs)


def meta_memo(module) -> dict:
    """A `deepcopy` memo that copies each parameter and buffer as a meta tensor: the copy costs no
    memory (a level-2 linear layer's weights alone can be 4 GiB)."""
    import torch  # deferred: torch is heavy

    memo: dict = {}
    for tensor in (*module.parameters(), *module.buffers()):
        meta = torch.empty_like(tensor, device="meta")
        memo[id(tensor)] = (
            torch.nn.Parameter(meta, tensor.requires_grad) if isinstance(tensor, torch.nn.Parameter) else meta
        )
    return memo


def recorded(graph_module, inputs: list) -> tuple[NodeRecord, ...]:
    import torch  # deferred: torch is heavy
    import torch.fx  # deferred: torch is heavy

    seen: dict[str, object] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            value = super().run_node(node)
            seen[node.name] = value
            return value

    with torch.no_grad():
        Recorder(graph_module).run(*inputs)
    out = []
    for node in graph_module.graph.nodes:
        value = seen.get(node.name)
        inputs_of = tuple(n.name for n in node.all_input_nodes)
        if isinstance(value, torch.Tensor):
            out.append(
                NodeRecord(
                    node.name,
                    node.op,
                    opname(node, graph_module),
                    inputs_of,
                    tuple(value.shape),
                    str(value.dtype).removeprefix("torch."),
                )
            )
        else:
            out.append(
                NodeRecord(node.name, node.op, opname(node, graph_module), inputs_of, literal=plain_literal(value))
            )
    return tuple(out)


def plain_literal(value) -> object:
    """A number, or a tuple of numbers, as it is (`x.size()`); anything else None."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, (bool, int, float)) for v in value):
        return tuple(value)
    return None
