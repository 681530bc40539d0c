"""The worker side of DataKernelBench's harness tasks: `Model`, `get_inputs` and `ModelNew` of one
query, made from its TorchPlan, for the two task kinds.

- **core**: `Model.forward(*tensors)` is the query's `_query_core` on the tensors its extraction made
  from the real data (captured once per data folder and plan into `<data>/core/<query>-<hash>.pt`, then reused); the
  scalars (date bounds, string codes) are fixed per data set and bound into the model.
- **full**: `Model.forward()` is the whole query from the Parquet files: extraction (read, encode),
  the copy to the model's device, and the core, returning the same result matrix (so the two kinds
  compare alike).

Inputs per seed: the harness draws each case after `torch.manual_seed(seed)`. A core task keeps a
random 90% of the rows of its largest table (the tensors that are that table's columns; dictionaries'
lookup tables and other tables are kept whole), so every seed is a different, valid data set and a
candidate that caches its answer across calls fails the input-sensitivity check. A full task's input
is the data folder, the same every seed.

A candidate (`ModelNew`) is a kernel file's `core(tensors, scalars)` (same contract as `_query_core`,
with Triton kernels inside) bound by `core_model` or `full_model` with the same query and data.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import SimpleNamespace

from diagnose.bench.suites.datakernel_data import TABLES, load_query, tables_of

KEEP = 0.9
_PROBLEMS: dict = {}


def query_module(query: str):

    return load_query(Path(query))


def capture_path(query: str, data: str) -> Path:
    """Where a query's captured core inputs lie: named by a hash of its TorchPlan and the shared module, so
    that an edited plan captures again."""

    query = Path(query)
    digest = hashlib.sha256(query.read_bytes() + (query.parent / "_tpch.py").read_bytes()).hexdigest()[:12]
    return Path(data) / "core" / f"{query.stem}-{digest}.pt"


def captured(query: str, data: str) -> dict:
    """The core's inputs on the data set: `names`, `tensors`, `scalars`, `rows` (names of the largest
    table's columns). Made on first use and saved beside the data."""
    import torch  # deferred: torch is heavy

    path = capture_path(query, data)
    if path.is_file():
        return torch.load(path, weights_only=True)
    module = query_module(query)

    tensors, scalars, _ = module.extract(tables_of(Path(data)))
    rows = largest_table_columns(tensors, Path(data))
    value = {"names": list(tensors), "tensors": list(tensors.values()), "scalars": scalars, "rows": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    torch.save(value, tmp)
    os.replace(tmp, path)
    return value


def largest_table_columns(tensors: dict, data: Path) -> list[str]:
    """The names among `tensors` that are columns of the largest table they read."""
    import pyarrow.parquet as pq  # optional: the datakernel extra

    owner = {}
    for table in TABLES:
        for column in pq.read_schema(data / f"{table}.parquet").names:
            owner[column] = table
    sizes = {owner[n]: len(t) for n, t in tensors.items() if n in owner}
    if not sizes:
        return []
    largest = max(sizes, key=sizes.get)
    return [n for n in tensors if owner.get(n) == largest]


def subsample(value: dict) -> list:
    """The core inputs with a random `KEEP` share of the largest table's rows (module docstring)."""
    import torch  # deferred: torch is heavy

    rows = [i for i, n in enumerate(value["names"]) if n in value["rows"]]
    tensors = list(value["tensors"])
    if not rows:
        return [t.clone() for t in tensors]
    keep = torch.rand(len(tensors[rows[0]])) < KEEP
    return [t[keep].clone() if i in rows else t.clone() for i, t in enumerate(tensors)]


def core_model(query: str, data: str, core):
    """An `nn.Module` class whose forward is `core` on the captured inputs' names and scalars."""
    import torch  # deferred: torch is heavy

    value = captured(query, data)
    names, scalars = list(value["names"]), dict(value["scalars"])

    class Core(torch.nn.Module):
        def forward(self, *tensors):
            return core(dict(zip(names, tensors)), scalars)

    Core.__name__ = Core.__qualname__ = f"{Path(query).stem}_core"
    return Core


def full_model(query: str, data: str, core):
    """An `nn.Module` class whose forward runs the query's extraction on the Parquet files, then `core`."""
    import torch  # deferred: torch is heavy

    module = query_module(query)

    class Full(torch.nn.Module):
        def __init__(self):
            super().__init__()
            # Where the harness put the model (`.to(device)`): the extracted tensors are copied there.
            self.register_buffer("anchor", torch.zeros(0), persistent=False)

        def forward(self):
            tensors, scalars, _ = module.extract(tables_of(Path(data)))
            return core({k: v.to(self.anchor.device) for k, v in tensors.items()}, scalars)

    Full.__name__ = Full.__qualname__ = f"{Path(query).stem}_full"
    return Full


def problem(query: str, data: str, kind: str) -> SimpleNamespace:
    """The reference of one task: `Model`, `get_inputs`, `get_init_inputs` (one per worker)."""
    key = (query, data, kind)
    if key in _PROBLEMS:
        return _PROBLEMS[key]
    module = query_module(query)
    if kind == "core":
        value = captured(query, data)
        made = SimpleNamespace(
            Model=core_model(query, data, module._query_core),
            get_inputs=lambda: subsample(value),
            get_init_inputs=lambda: [],
        )
    else:
        made = SimpleNamespace(
            Model=full_model(query, data, module._query_core), get_inputs=lambda: [], get_init_inputs=lambda: []
        )
    _PROBLEMS[key] = made
    return made


def candidate(query: str, data: str, kind: str, core):
    """`ModelNew` of a kernel file's `core` for one task."""
    return (core_model if kind == "core" else full_model)(query, data, core)
