"""The worker job that cuts a model into subtasks, and its parent-side call.

`decompose_job` (worker side: it runs the user's model) imports the task file, builds `Model` as the
harness does (`diagnose.verify.jobs.build_model`, same seed, so the parameter values are those every
verification of this file sees), traces it, records a forward on `get_inputs()`, partitions the graph
and writes one task file per subgraph. `capture` runs it in a fresh worker and turns its failures into
one-line `UsageError`s: the model's own code raising, or a model fx cannot trace.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from diagnose.decompose import graph, partition, subtask
from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.partition import Subgraph
from diagnose.errors import UsageError
from diagnose.runtime.runner import call
from diagnose.task import import_task_file
from diagnose.verify.jobs import build_model

ENTRY = "diagnose.decompose.jobs:decompose_job"
SUBTASKS_ENTRY = "diagnose.decompose.jobs:subtasks_job"


@dataclass(frozen=True)
class Decomposition:
    """The model's graph, its subgraphs, their task files, and what the composite needs: the forward's
    argument names and the expression of its return value over node names."""

    model: Path
    records: tuple[NodeRecord, ...]
    subgraphs: tuple[Subgraph, ...]
    files: tuple[Path, ...]
    arguments: tuple[str, ...]
    returns: str


def traced_model(path: str):
    """The task file's `Model`, built as the harness builds it, traced and recorded on `get_inputs()`."""
    module = import_task_file(path)
    model = build_model(module.Model, list(module.get_init_inputs()), "cpu")
    inputs = list(module.get_inputs())
    traced = graph.trace(model, inputs)
    graph.refuse_state_writes(traced)
    return traced, graph.record(traced, inputs)


def decompose_job(payload: dict) -> dict:
    try:
        traced, records = traced_model(payload["model"])
    except ValueError as exc:
        return {"error": str(exc)}
    folder = Path(payload["folder"])
    try:
        subgraphs = partition.partition(records)
        files = [subtask.write(traced, records, sg, Path(payload["model"]), folder) for sg in subgraphs]
    except ValueError as exc:
        return {"error": str(exc)}
    output = next(n for n in traced.graph.nodes if n.op == "output")
    return {
        "records": [asdict(r) for r in records],
        "subgraphs": [asdict(s) for s in subgraphs],
        "files": [str(f) for f in files],
        "returns": rendered(output.args[0]),
        "arguments": [n.name for n in traced.graph.nodes if n.op == "placeholder"],
    }


def rendered(value) -> str:
    """The forward's return value as code over node names."""
    if hasattr(value, "name") and hasattr(value, "op"):
        return value.name
    if isinstance(value, tuple):
        return "(" + "".join(f"{rendered(v)}, " for v in value).rstrip(" ") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(rendered(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {rendered(v)}" for k, v in value.items()) + "}"
    return repr(value)


def capture(model: Path, folder: Path, timeout_s: float = 600.0) -> Decomposition:
    """Cut the model of the task file `model` into subtasks written in `folder`."""
    result = call(ENTRY, {"model": str(model), "folder": str(folder)}, timeout_s=timeout_s)
    if not result.ok:
        first = (result.failure.message.strip().splitlines() or [result.failure.kind])[0]
        raise UsageError(f"{model}: the model failed to build or run: {first}")
    value = result.value
    if "error" in value:
        raise UsageError(f"{model}: {value['error']}")
    return Decomposition(
        model,
        tuple(NodeRecord.from_dict(r) for r in value["records"]),
        tuple(Subgraph.from_dict(s) for s in value["subgraphs"]),
        tuple(Path(f) for f in value["files"]),
        tuple(value["arguments"]),
        value["returns"],
    )


def subtasks_job(payload: dict) -> dict:
    """Worker side: the model traced again as `decompose_job` traces it (the same node names) and a task
    file written for each subgraph given (fused ones, `search.py`)."""
    traced, records = traced_model(payload["model"])
    folder = Path(payload["folder"])
    return {
        "files": [
            str(subtask.write(traced, records, Subgraph.from_dict(s), Path(payload["model"]), folder))
            for s in payload["subgraphs"]
        ]
    }


def write_subtasks(
    found: Decomposition, subgraphs: list[Subgraph], folder: Path, timeout_s: float = 600.0
) -> list[Path | None]:
    """A task file in `folder` for each of `subgraphs` (of `found`'s model); None for all where the
    worker failed (the search then fuses nothing)."""
    result = call(
        SUBTASKS_ENTRY,
        {"model": str(found.model), "folder": str(folder), "subgraphs": [asdict(s) for s in subgraphs]},
        timeout_s=timeout_s,
    )
    if not result.ok:
        return [None] * len(subgraphs)
    return [Path(f) for f in result.value["files"]]
