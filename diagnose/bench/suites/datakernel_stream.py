"""DataKernelBench out of core: a TorchPlan run over its largest table in partitions, for data larger
than the device's memory.

A streamable query (`STREAM = "lineitem"`, with `_partial_core`, `_final` and `PARTIAL_KEYS` beside its
`_query_core = _final(_partial_core(...))`) is one whose result is a decomposable aggregate of the
streamed table's rows: `_partial_core` gives, per group, the key columns then additive columns (sums
and counts; an average is carried as its sum and count), and `_final` turns the merged partials into
the result (averages, ratios, ORDER BY, LIMIT, joins to small tables). The runner:

1. reads which columns the query takes (its extraction run once on an empty partition) and fixes the
   dictionaries of the streamed table's string columns from the whole column (`dask`'s `unique`), so
   every partition encodes strings alike;
2. reads the other tables once, whole (they are the small side of every streamable query);
3. streams `dask.dataframe.read_parquet` partitions of the streamed table (`split_row_groups`: whole
   Parquet row groups per partition) through the device: extraction, `_partial_core` there, the
   partial copied back to the host;
4. merges the partials on the host (`_tpch.merge`: equal keys summed), then `_final` and `decode`.

Partition size: `--partition-rows`, else what fits in a quarter of the device's free memory (CUDA's
`mem_get_info`; the host's available memory for `cpu`) at `OVERHEAD` times the bytes of one row's
extracted tensors (the core's masks and temporaries).

Streamable: Q1, Q3, Q5, Q6, Q7, Q8, Q9, Q10, Q12, Q14, Q19: each sums over lineitem rows joined to
smaller tables (keyed by something every row carries whole). Not streamed: Q4, Q18 and Q21 need every
line of an order together (EXISTS / HAVING over an order's lines; lineitem's partitions split
orders); Q17 and Q20 compare a line with an average or sum over all lines of its part (two passes);
Q15's maximum over per-supplier sums needs every partition first (possible, not done); Q2, Q11, Q13,
Q16 and Q22 never read lineitem, and their largest tables (partsupp, orders) fit wherever lineitem's
partitions do.
"""

from __future__ import annotations

import os
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from diagnose.bench.suite import matches
from diagnose.bench.suites import datakernel_data as data
from diagnose.bench.suites.datakernel_data import ROW_GROUP_ROWS, compare, load_query, oracle, sql_of
from diagnose.errors import UsageError

OVERHEAD = 8
MEMORY_SHARE = 0.25


@dataclass(frozen=True)
class StreamRun:
    """One query run out of core: how it was partitioned, how long it took, and DuckDB's verdict."""

    query: str
    partitions: int
    partition_rows: int
    seconds: float
    ok: bool
    detail: str


@contextmanager
def quiet_dask():
    """Dask's Parquet reader calls a pandas API that pandas 3.1 deprecates (`reset_index(inplace=True)`):
    its warning says nothing about the query, so it is not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The inplace keyword in DataFrame.reset_index")
        yield


def streamable(module) -> bool:
    return all(hasattr(module, name) for name in ("STREAM", "_partial_core", "_final", "PARTIAL_KEYS"))


def free_bytes(device: str) -> int:
    """Free memory of the device the partitions go through."""
    if device.startswith("cuda"):
        import torch  # deferred: torch is heavy

        return int(torch.cuda.mem_get_info()[0])
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return 4 * 2**30


def rows_for(bytes_per_row: int, device: str) -> int:
    """Rows per partition that fit in `MEMORY_SHARE` of the device's free memory."""
    return max(1, int(free_bytes(device) * MEMORY_SHARE / max(1, bytes_per_row * OVERHEAD)))


class Recorder:
    """A `Tables` stand-in that records which columns of which table an extraction reads (and serves
    empty ones for the streamed table)."""

    def __init__(self, tables, stream: str):
        self.tables, self.stream, self.read_columns = tables, stream, {}

    def __getattr__(self, name):
        return getattr(self.tables, name)

    def read(self, name, columns):
        self.read_columns.setdefault(name, [])
        self.read_columns[name] += [c for c in columns if c not in self.read_columns[name]]
        frame = self.tables.read(name, columns)
        return frame.slice(0, 0) if name == self.stream else frame


def plan(module, folder: Path):
    """(columns read per table, bytes per streamed row) from one extraction on an empty partition."""
    import pyarrow.parquet as pq  # optional: the datakernel extra

    from _tpch import Tables  # deferred: the suite's own module, importable once its folder is on sys.path

    path = folder / f"{module.STREAM}.parquet"
    stream_columns = pq.read_schema(path).names
    recorder = Recorder(Tables(folder, frames={module.STREAM: pq.read_table(path).slice(0, 0)}), module.STREAM)
    tensors, _, _ = module.extract(recorder)
    per_row = sum(t.element_size() for n, t in tensors.items() if n in stream_columns)
    return recorder.read_columns, per_row


def fixed_dictionaries(module, folder: Path, columns: list[str]) -> dict:
    """The sorted distinct values of the streamed table's string columns, over the whole column."""
    import dask.dataframe as dd  # optional: the datakernel extra
    import pyarrow as pa  # optional: the datakernel extra
    import pyarrow.parquet as pq  # optional: the datakernel extra

    schema = pq.read_schema(folder / f"{module.STREAM}.parquet")
    strings = [
        c for c in columns if pa.types.is_string(schema.field(c).type) or pa.types.is_large_string(schema.field(c).type)
    ]
    out = {}
    for column in strings:
        frame = dd.read_parquet(str(folder / f"{module.STREAM}.parquet"), columns=[column], dtype_backend="pyarrow")
        with quiet_dask():
            out[f"{module.STREAM}.{column}"] = sorted(str(v) for v in frame[column].unique().compute().tolist())
    return out


def run_streamed(
    module,
    folder: Path,
    device: str = "cpu",
    partition_rows: int | None = None,
    on_partition: Callable[[int, int], None] | None = None,
) -> tuple[list[tuple], int, int]:
    """The query's result rows streamed (module docstring), the partition count and rows per partition.
    `on_partition(done, total)` hears of each partition."""
    import dask.dataframe as dd  # optional: the datakernel extra
    import pyarrow as pa  # optional: the datakernel extra
    import pyarrow.parquet as pq  # optional: the datakernel extra
    import torch  # deferred: torch is heavy

    from _tpch import (
        Tables,
        decode,
        merge,
    )  # deferred: the suite's own module, importable once its folder is on sys.path

    folder = Path(folder)
    columns, per_row = plan(module, folder)
    rows = partition_rows or rows_for(per_row, device)
    groups = max(1, rows // ROW_GROUP_ROWS)
    others = {
        name: pq.read_table(folder / f"{name}.parquet", columns=cols)
        for name, cols in columns.items()
        if name != module.STREAM
    }
    dictionaries = fixed_dictionaries(module, folder, columns[module.STREAM])
    frame = dd.read_parquet(
        str(folder / f"{module.STREAM}.parquet"),
        columns=columns[module.STREAM],
        split_row_groups=groups,
        dtype_backend="pyarrow",
    )
    partials, tensors, scalars, names = [], {}, {}, {}
    for i in range(frame.npartitions):
        with quiet_dask():
            part = pa.Table.from_pandas(frame.get_partition(i).compute(), preserve_index=False)
        tables = Tables(folder, frames={**others, module.STREAM: part}, dictionaries=dictionaries)
        tensors, scalars, names = module.extract(tables)
        tensors = {k: v.to(device) for k, v in tensors.items()}
        partials.append(module._partial_core(tensors, scalars).cpu())
        if on_partition:
            on_partition(i + 1, frame.npartitions)
    merged = merge(torch.cat(partials), module.PARTIAL_KEYS)
    result = module._final(merged.to(device), tensors, scalars).cpu()
    return decode(result, module.COLUMNS, names), frame.npartitions, groups * ROW_GROUP_ROWS


def validate_streamed(
    path: Path,
    folder: Path,
    device: str = "cpu",
    partition_rows: int | None = None,
    on_partition: Callable[[int, int], None] | None = None,
) -> StreamRun:
    """Run one query out of core and compare it with DuckDB's answer."""

    module = load_query(path)
    if not streamable(module):
        raise UsageError(f"{path.stem} is not streamable (see diagnose/bench/suites/datakernel_stream.py)")
    start = time.perf_counter()
    mine, partitions, rows = run_streamed(module, folder, device, partition_rows, on_partition)
    seconds = time.perf_counter() - start
    verdict = compare(mine, oracle(folder, sql_of(module)))
    return StreamRun(path.stem, partitions, rows, seconds, verdict.ok, verdict.detail)


def stream_command(root: Path, sf: float | None, pattern: str | None, device: str, partition_rows: int | None) -> int:
    """`diagnose bench datakernel --mode stream`: every streamable query (or those `pattern` names), a
    progress bar each, a table of results (each row printed as its query ends); exit 1 when one does not
    match DuckDB."""
    from rich.console import Console  # deferred: only the command line prints
    from rich.progress import Progress  # deferred: only the command line prints

    console = Console(stderr=True)
    folder = data.dataset(sf or 0.01, progress=lambda text: console.print(text, markup=False))
    paths = [p for p in data.query_files(Path(root)) if not pattern or matches(p.stem, pattern)]
    paths = [p for p in paths if streamable(data.load_query(p))]
    if not paths:
        raise UsageError("no streamable query matches" + (f" {pattern!r}" if pattern else ""))
    runs = []
    # Each row as its query ends: a run cut short by an outer time limit (SF 10 on a device) keeps its rows.
    print(f"{'query':6} {'partitions':>10} {'rows each':>10} {'seconds':>8}  DuckDB", flush=True)
    for path in paths:
        with Progress(console=console, transient=False) as bar:
            task = bar.add_task(f"{path.stem} out of core", total=None)
            run = validate_streamed(
                path,
                folder,
                device,
                partition_rows,
                lambda done, total: bar.update(task, completed=done, total=total),
            )
        runs.append(run)
        print(
            f"{run.query:6} {run.partitions:>10} {run.partition_rows:>10} {run.seconds:>8.2f}  "
            f"{'match' if run.ok else 'MISMATCH: ' + run.detail}",
            flush=True,
        )
    return 0 if all(r.ok for r in runs) else 1
