"""Each subgraph written as a task file in the task format (`Model`, `get_inputs`, `get_init_inputs`).

Worker side: it reads the traced model. The file's `Model` re-creates the subgraph's layers from their
constructor arguments (`nn.Conv2d(3, 8, kernel_size=(3, 3), ...)`, as torch prints them) and loads
the whole model's values of their parameters from `<name>.pt` beside it; its forward is the
subgraph's code as torch.fx writes it. `get_inputs()` draws random tensors at the shapes and dtypes
the subgraph's inputs had in the real forward of the whole model (a number it reads, `x.size(0)`,
keeps the value it had). The shapes are those of that forward only (`FIXED_SHAPES = True`).
"""

from __future__ import annotations

import inspect
import itertools
import math
import operator
import re
from pathlib import Path

from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.partition import Subgraph
from diagnose.verify import tensors

# The modules whose functions fx wraps under names of its own (`math_sqrt`), by the `__module__` they report.
WRAPPED = {"math": math, "operator": operator, "_operator": operator}
# What fx's code may name beyond the imports every subtask file has.
KNOWN_GLOBALS = frozenset({"torch", "math", "operator", "inf", "nan", "NoneType", "device"})
# fx frees each value after its last use (`;  x = conv = None`): noise in code meant for reading.
FREED = re.compile(r";\s+(?:\w+ = )+None\s*$")

HEADER = '''"""Subgraph {name} of {model}: {ops}.

Written by `diagnose decompose`: the subgraph as it runs in the whole model, with the model's own
parameter values (loaded from {name}.pt beside this file). `get_inputs()` draws random tensors at the
shapes and dtypes the subgraph's inputs had in a real forward of the whole model. A Triton
implementation is a `ModelNew` with the same constructor (no arguments) and forward; named as here,
its parameters get these values.
"""
import math
import operator
from pathlib import Path

import torch
import torch.nn as nn

HERE = Path(__file__).resolve().parent
inf, nan = math.inf, math.nan  # as fx writes them (`x.masked_fill(mask, -inf)`)
FIXED_SHAPES = True  # the shapes of the whole model's forward, no others


class Model(nn.Module):
    def __init__(self):
        super().__init__()
'''


def sub_module(graph_module, sg: Subgraph):
    """The subgraph as an fx `GraphModule` over the whole model's layers."""
    import torch.fx  # deferred: torch is heavy

    nodes = {n.name: n for n in graph_module.graph.nodes}
    graph = torch.fx.Graph()
    env = {name: graph.placeholder(name) for name in sg.inputs}
    env.update({name: graph.get_attr(nodes[name].target) for name in sg.params})
    for name in sg.nodes:
        env[name] = graph.node_copy(nodes[name], lambda n: env[n.name])
    graph.output(env[sg.output])
    return torch.fx.GraphModule(graph_module, graph)


def owner_of(path: str) -> str:
    """The code that names the module at `path` (`self.block`; `self.get_submodule("block.0")` where a
    part is no identifier, as in an `nn.Sequential`)."""
    if not path:
        return "self"
    if all(part.isidentifier() for part in path.split(".")):
        return f"self.{path}"
    return f"self.get_submodule({path!r})"


def assign(target: str, code: str) -> str:
    """The line that puts `code` at `target` under the model."""
    owner, _, leaf = target.rpartition(".")
    if leaf.isidentifier():
        return f"{owner_of(owner)}.{leaf} = {code}"
    return f"{owner_of(owner)}.add_module({leaf!r}, {code})"


def layer_code(target: str, layer) -> str:
    """The constructor call that re-creates `layer`, cast to its parameters' dtype: torch's own repr where
    that is a call (`Conv2d(3, 8, kernel_size=(3, 3))`), else the constructor's arguments read from the
    layer's attributes of the same names (`nn.MultiheadAttention` prints its submodules, not a call).
    Either must rebuild a layer of the same type with the same parameter shapes."""
    tried = []
    for code in (f"nn.{layer!r}", *from_attributes(layer)):
        tried.append(code)
        try:
            again = rebuilt(code)
        except ValueError:
            continue
        if type(again) is type(layer) and shapes(again) == shapes(layer):
            break
    else:
        raise ValueError(
            f"cannot re-create the layer {target} ({type(layer).__name__}) from "
            + " or ".join(c.splitlines()[0] for c in tried[:3])
        )
    dtypes = {v.dtype for v in layer.state_dict().values() if v.is_floating_point()}
    if len(dtypes) == 1 and str(next(iter(dtypes))) != "torch.float32":
        code += f".to({next(iter(dtypes))})"
    return code


def layer_lines(graph_module, sub) -> tuple[list[str], dict]:
    """The `__init__` lines that re-create the subgraph's layers and parameters, and their values."""
    import torch  # deferred: torch is heavy

    lines, state, made = [], {}, set()

    def parents(target: str) -> None:
        parts = target.split(".")[:-1]
        for i in range(1, len(parts) + 1):
            path = ".".join(parts[:i])
            if path not in made:
                made.add(path)
                lines.append(assign(path, "nn.Module()"))

    for node in sub.graph.nodes:
        if node.op == "call_module" and node.target not in made:
            layer = graph_module.get_submodule(node.target)
            code = layer_code(node.target, layer)
            parents(node.target)
            made.add(node.target)
            lines.append(assign(node.target, code))
            state.update({f"{node.target}.{k}": v.detach() for k, v in layer.state_dict().items()})
        elif node.op == "get_attr" and node.target not in made:
            value = getattr_path(graph_module, node.target)
            parents(node.target)
            made.add(node.target)
            owner, _, leaf = node.target.rpartition(".")
            empty = f"torch.empty({tuple(value.shape)}, dtype={value.dtype})"
            if isinstance(value, torch.nn.Parameter):
                lines.append(assign(node.target, f"nn.Parameter({empty})"))
            else:
                lines.append(f"{owner_of(owner)}.register_buffer({leaf!r}, {empty})")
            state[node.target] = value.detach()
    return lines, state


def from_attributes(layer) -> list[str]:
    """Calls `nn.Name(arg=value, ...)` with the layer's attributes named as its constructor's parameters
    (every parameter without a default must have one, each value a plain literal), one per setting of the
    boolean parameters it keeps no attribute for (`MultiheadAttention`'s `bias`, `add_bias_kv`; at most
    four such); none where the layer is not `torch.nn`'s own. `layer_code` keeps the first whose rebuilt
    layer has the same parameter shapes."""
    import torch  # deferred: torch is heavy

    cls = type(layer)
    if getattr(torch.nn, cls.__name__, None) is not cls:
        return []
    known, unknown = [], []
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if name in ("self", "device", "dtype") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        value = getattr(layer, name, parameter.empty)
        if value is not parameter.empty and plain(value):
            if value is not parameter.default and value != parameter.default:
                known.append(f"{name}={value!r}")
        elif parameter.default is parameter.empty:
            return []
        elif isinstance(parameter.default, bool):
            unknown.append(name)
    unknown = unknown[:4]
    return [
        f"nn.{cls.__name__}({', '.join(known + [f'{n}={v}' for n, v in zip(unknown, values)])})"
        for values in itertools.product((True, False), repeat=len(unknown))
    ]


def plain(value) -> bool:
    """A value whose repr is its literal."""
    if isinstance(value, (tuple, list)):
        return all(plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def rebuilt(code: str):
    import torch  # deferred: torch is heavy

    try:
        with torch.device("meta"):  # only its type and shapes are compared: no memory for its weights
            return eval(code, {"nn": torch.nn, "torch": torch})  # noqa: S307 - torch's own repr of a torch layer
    except Exception as exc:  # noqa: BLE001 - any failure means the repr is not a constructor call
        raise ValueError(f"cannot re-create a layer from {code} ({type(exc).__name__}: {exc})") from None


def shapes(layer) -> dict:
    return {k: tuple(v.shape) for k, v in layer.state_dict().items()}


def getattr_path(root, target: str):
    for part in target.split("."):
        root = getattr(root, part)
    return root


def forward_code(sub) -> str:
    """The subgraph's forward as fx writes it, without its freeing of values after their last use."""
    python = sub.graph.python_code("self")
    src = python.src
    used = {name for name in python.globals if re.search(rf"\b{re.escape(name)}\b", src)}
    for name in sorted(used - KNOWN_GLOBALS):
        # fx names a `math` function it wrapped (`math.sqrt(k.size(-1))`) `math_sqrt`: written back as itself
        function = python.globals[name]
        module = WRAPPED.get(getattr(function, "__module__", None))
        if module is not None and getattr(module, getattr(function, "__name__", ""), None) is function:
            src = re.sub(rf"\b{re.escape(name)}\b", f"{module.__name__}.{function.__name__}", src)
            used.discard(name)
    unknown = sorted(used - KNOWN_GLOBALS)
    if unknown:
        raise ValueError(f"the subgraph's code needs names a task file cannot import: {', '.join(unknown)}")
    # fx re-registers the functions it wrapped (`torch.fx._symbolic_trace.wrap("math.sqrt")`): for tracing
    # this code again, which a task file never does
    lines = [
        FREED.sub("", line).rstrip()
        for line in src.strip("\n").splitlines()
        if not line.lstrip().startswith("torch.fx._symbolic_trace.wrap(")
    ]
    return "\n".join("    " + line if line else "" for line in lines if line.strip()) + "\n"


def input_expression(record: NodeRecord) -> str:
    """A fresh value for one input, at the shape and dtype it had in the whole model's forward."""
    if not record.is_tensor:
        return repr(record.literal)
    if record.dtype in ("float32", "float16", "bfloat16", "float64"):
        return f"torch.randn({record.shape}, dtype=torch.{record.dtype})"
    if record.dtype == "bool":
        return f"torch.rand({record.shape}) < 0.5"
    return f"torch.randint(0, 8, {record.shape}, dtype=torch.{record.dtype})"


def describe(sg: Subgraph, records: dict[str, NodeRecord]) -> str:
    """`conv2d -> add -> relu` (the numbers it computes on the way, `x.size(0)`, left out)."""
    ops = [records[n].opname for n in sg.nodes if records[n].is_tensor or records[n].literal is None]
    return " -> ".join(ops or [records[n].opname for n in sg.nodes])


def write(graph_module, records: tuple[NodeRecord, ...], sg: Subgraph, model: Path, folder: Path) -> Path:
    """Write `<folder>/<name>.py` and `<name>.pt` (its parameter values: refused before it is written where
    it would not fit, `tensors.NoRoom`); the task file's path."""
    by_name = {r.name: r for r in records}
    for name in sg.inputs:
        if not by_name[name].is_tensor and by_name[name].literal is None:
            raise ValueError(f"subgraph {sg.name} reads {name}, neither a tensor nor a number")
    sub = sub_module(graph_module, sg)
    lines, state = layer_lines(graph_module, sub)
    tensors.save(state, folder / f"{sg.name}.pt")
    body = "".join(f"        {line}\n" for line in lines)
    load = f'        self.load_state_dict(torch.load(HERE / "{sg.name}.pt", weights_only=True))\n' if state else ""
    inputs = ", ".join(input_expression(by_name[n]) for n in sg.inputs)
    text = (
        HEADER.format(name=sg.name, model=model.name, ops=describe(sg, by_name))
        + body
        + load
        + "\n"
        + forward_code(sub)
        + f"\n\ndef get_inputs():\n    return [{inputs}]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    path = folder / f"{sg.name}.py"
    path.write_text(text)
    return path
