"""DataKernelBench's data and oracle: TPC-H tables generated once per scale factor into the cache, the
suite's query modules loaded by path, and each TorchPlan's result checked against DuckDB's.

Data: DuckDB's `tpch` extension (the file that the `duckdb-extension-tpch` package ships, loaded with
no network) runs `CALL dbgen(sf=N)` and writes one Parquet file per table into
`<root>/sf<N>/`, where `<root>` is `$DIAGNOSE_DATAKERNEL_DIR`, else `datakernel/` under the user cache
(`diagnose.knobs.user_cache_root`). The folder is written under a temporary name and renamed when
complete, so a run that stops half way leaves nothing that looks done; a later run reuses it. The
`lineitem` and `orders` files are written in row groups of `ROW_GROUP_ROWS` rows: the unit the
out-of-core runner (`datakernel_stream.py`) streams in.

Oracle: the query's SQL (its `run_query` docstring, the standard TPC-H text with the validation
parameters) run by DuckDB over views of the same Parquet files.

Comparison (`compare`): row for row in ORDER BY order; keys, strings, dates and counts (Python ints)
must be equal; any other number within `RELATIVE` = 1e-9 of DuckDB's (relative, with the same
absolute floor, for values near zero). DuckDB sums decimals exactly; a TorchPlan sums them in float64,
whose error over n additions is about n * 2**-53 relative, under 1e-10 for the 60 million rows of
SF 10. Where a float rounding could change which rows are in the result (a HAVING threshold, an
equality with a maximum, a correlated average), the TorchPlan computes in exact int64 hundredths
instead (Q11, Q15, Q17, Q20, Q22). Where ORDER BY leaves ties, DuckDB's order among tied rows is
arbitrary: when the rows do not match in order, they are compared again as sorted multisets.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import os
import shutil
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Callable

from diagnose.bench.suite import matches
from diagnose.bench.suites.cpu_shapes import import_file
from diagnose.errors import UsageError
from diagnose.knobs import user_cache_root

ROOT_ENV = "DIAGNOSE_DATAKERNEL_DIR"
SCALE_FACTORS = (0.01, 0.1, 1.0, 3.0, 10.0, 30.0, 100.0)
TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")
ROW_GROUP_ROWS = 16384
RELATIVE = 1e-9
MISSING = "DataKernelBench needs duckdb, duckdb-extension-tpch, pyarrow and dask: pip install 'diagnose[datakernel]'"


@dataclass(frozen=True)
class Comparison:
    """A TorchPlan's result against DuckDB's: whether they match, and where not."""

    ok: bool
    detail: str
    rows: int
    tie_order: bool = False  # matched only as multisets (ORDER BY left ties)


def require() -> None:
    """A one-line `UsageError` when a package the suite needs is missing."""
    for name in ("duckdb", "duckdb_extension_tpch", "pyarrow", "dask"):
        if importlib.util.find_spec(name) is None:
            raise UsageError(f"{MISSING} ({name} is not installed)")


def check_scale(sf: float) -> float:
    if float(sf) not in SCALE_FACTORS:
        known = ", ".join(f"{s:g}" for s in SCALE_FACTORS)
        raise UsageError(f"unknown scale factor --sf {sf:g}; choose one of {known}")
    return float(sf)


def data_root() -> Path:
    """Where generated data sets live (`$DIAGNOSE_DATAKERNEL_DIR`, else the user cache's `datakernel/`)."""
    override = os.environ.get(ROOT_ENV)
    if override:
        return Path(override).expanduser()

    return user_cache_root() / "datakernel"


def folder_name(sf: float) -> str:
    return f"sf{sf:g}"


def extension_path() -> Path:
    """The tpch extension file the `duckdb-extension-tpch` package ships."""
    require()
    import duckdb_extension_tpch  # optional: the datakernel extra

    found = sorted(Path(duckdb_extension_tpch.__file__).parent.rglob("tpch.duckdb_extension"))
    if not found:
        raise UsageError("duckdb-extension-tpch ships no tpch.duckdb_extension file here; reinstall it")
    return found[-1]


def connect():
    """A DuckDB connection with the tpch extension loaded from the package's file."""
    import duckdb  # optional: the datakernel extra

    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension_path()}'")
    return con


def dataset(sf: float, root: Path | None = None, progress: Callable[[str], None] | None = None) -> Path:
    """The Parquet folder of scale factor `sf`, generated on first use (`progress` hears what happens)."""
    require()
    sf = check_scale(sf)
    root = Path(root) if root is not None else data_root()
    folder = root / folder_name(sf)
    if (folder / "DONE").is_file():
        return folder
    say = progress or (lambda text: None)
    say(f"generating TPC-H data at SF {sf:g} into {folder} (once; reused after)")
    scratch = root / f".{folder.name}.partial-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        con = connect()
        con.execute(f"CALL dbgen(sf={sf})")
        for name in TABLES:
            say(f"  writing {name}.parquet")
            con.execute(
                f"COPY {name} TO '{scratch / (name + '.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
            )
        con.close()
        (scratch / "DONE").write_text(f"sf {sf:g}\n")
        if folder.exists():  # another process finished first: keep its copy
            shutil.rmtree(scratch)
        else:
            scratch.rename(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def query_files(root: Path) -> list[Path]:
    """The query modules of a suite folder: `q01.py` ... `q22.py`."""
    return sorted(p for p in Path(root).glob("q[0-9][0-9].py"))


def load_query(path: Path) -> ModuleType:
    """Import a query module by path, its folder first on `sys.path` (for the shared `_tpch`)."""
    path = Path(path).resolve()
    return import_file(path, f"datakernel_{path.stem}")


def sql_of(module: ModuleType) -> str:
    """The query's SQL: its `run_query` docstring."""

    return inspect.cleandoc(module.run_query.__doc__ or "")


def tables_of(folder: Path):
    """The `Tables` of the suite's shared module for a data folder (after `load_query` put it on the path)."""
    from _tpch import Tables  # deferred: the suite's own module, importable once its folder is on sys.path

    return Tables(Path(folder))


def oracle(folder: Path, sql: str) -> list[tuple]:
    """DuckDB's answer to `sql` over the Parquet files of `folder`."""
    import duckdb  # optional: the datakernel extra

    con = duckdb.connect()
    for name in TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{Path(folder) / (name + '.parquet')}')")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def same(mine, theirs) -> bool:
    if theirs is None or mine is None:
        return mine is None and theirs is None
    if isinstance(theirs, (float, Decimal)) or isinstance(mine, float):
        a, b = float(mine), float(theirs)
        return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=RELATIVE)
    return mine == theirs


def first_difference(mine: list[tuple], theirs: list[tuple]) -> str | None:
    if len(mine) != len(theirs):
        return f"{len(mine)} rows, DuckDB {len(theirs)}"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if len(a) != len(b) or not all(same(x, y) for x, y in zip(a, b)):
            return f"row {i}: {a!r} != DuckDB's {b!r}"
    return None


def sort_key(row: tuple) -> tuple:
    return tuple((0, float(v)) if isinstance(v, (int, float, Decimal)) else (1, str(v)) for v in row)


def compare(mine: list[tuple], theirs: list[tuple]) -> Comparison:
    """`mine` against DuckDB's rows (module docstring: exact for keys, relative 1e-9 for the rest)."""
    problem = first_difference(mine, theirs)
    if problem is None:
        return Comparison(True, "match", len(theirs))
    if len(mine) == len(theirs) and first_difference(sorted(mine, key=sort_key), sorted(theirs, key=sort_key)) is None:
        return Comparison(True, "match (rows tied under ORDER BY in another order)", len(theirs), tie_order=True)
    return Comparison(False, problem, len(theirs))


def validate(path: Path, folder: Path) -> Comparison:
    """Run one query's TorchPlan on a data folder and compare it with DuckDB's answer."""
    module = load_query(path)
    mine = module.run_query(tables_of(folder))
    return compare(mine, oracle(folder, sql_of(module)))


def validate_command(root: Path, sf: float | None, pattern: str | None) -> int:
    """`diagnose bench datakernel --mode validate`: every TorchPlan (or those `pattern` names) against
    DuckDB on the data of `sf`; a table on stdout, exit 1 when one does not match."""

    from rich.console import Console  # deferred: only the command line prints

    console = Console(stderr=True)
    folder = dataset(sf or 0.01, progress=lambda text: console.print(text, markup=False))
    paths = [p for p in query_files(Path(root)) if not pattern or matches(p.stem, pattern)]
    if not paths:
        raise UsageError(f"{root}: no query matches {pattern!r}" if pattern else f"{root}: no DataKernelBench queries")
    print(f"{'query':6} {'rows':>6} {'seconds':>8}  DuckDB (keys exact, numbers within {RELATIVE:g} relative)")
    bad = 0
    for path in paths:
        start = time.perf_counter()
        result = validate(path, folder)
        bad += not result.ok
        print(
            f"{path.stem:6} {result.rows:>6} {time.perf_counter() - start:>8.2f}  "
            f"{result.detail if result.ok else 'MISMATCH: ' + result.detail}",
            flush=True,
        )
    return 1 if bad else 0
