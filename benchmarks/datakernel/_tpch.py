"""What every DataKernelBench TorchPlan shares: reading TPC-H tables from Parquet into tensors, the
encodings, and the tensor building blocks of relational operators.

Encodings (the extraction step of every `run_query`):

- dates -> int32 days since 1970-01-01 (`days`); a date literal is `day("1994-01-01")`;
- decimals -> float64 (`decimals`), or int64 cents where a comparison must be exact (`cents`: a
  HAVING threshold, an equality with a maximum, a correlated average);
- strings -> int32 codes into the column's dictionary, the sorted distinct values (`codes`), so code
  order is string order and ORDER BY on a string column sorts its codes. A string predicate (`=`,
  LIKE, IN) is evaluated once on the dictionary and becomes a code (`code_of`) or a boolean lookup
  table indexed by the codes (`like_table`, `in_table`).

Operators (pure tensor code, used by the `_query_core`s): joins on a unique key are sort-merge
(`lookup`: sort the build side, `torch.searchsorted` the probe side); semi and anti joins are `isin`;
group-by is a 1-D `torch.unique(..., return_inverse=True)` over the packed keys, then segment
reductions with `index_add_` (`group`, `segment_sum`); ORDER BY is a chain of stable sorts
(`order_by`); LIMIT is a slice.

Extraction is host work (pyarrow, numpy): its functions are left out of `torch.compile`'s graphs
(`torch.compiler.disable`), so the compiled TorchPlan, the suite's baseline, compiles the tensor code.

Every core returns one float64 matrix, a row per result row and a column per output column (string
columns as dictionary codes, dates as days); `decode` turns it into Python rows with the query's
`COLUMNS` spec.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

EPOCH = datetime.date(1970, 1, 1)
TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")


@dataclass(frozen=True)
class Tables:
    """The TPC-H tables of one data set: `folder/<table>.parquet`, except those given in `frames`
    (pyarrow tables already in memory: one partition of a streamed table). `dictionaries` fixes the
    dictionary of a string column (`"table.column"` -> sorted values), so that every partition of a
    streamed table encodes its strings the same way."""

    folder: Path
    frames: dict = field(default_factory=dict)
    dictionaries: dict = field(default_factory=dict)

    def read(self, name: str, columns: list[str]):
        """The named columns of one table, as a pyarrow table."""
        if name in self.frames:
            return self.frames[name].select(columns)
        import pyarrow.parquet as pq

        return pq.read_table(Path(self.folder) / f"{name}.parquet", columns=columns)


def day(text: str) -> int:
    """A date literal as days since the epoch."""
    return (datetime.date.fromisoformat(text) - EPOCH).days


def date_of(days: int) -> datetime.date:
    return EPOCH + datetime.timedelta(days=int(days))


def _numpy(array):
    return array.to_numpy(zero_copy_only=False)


@torch.compiler.disable
def days(array) -> torch.Tensor:
    """A date32 column as int32 days since the epoch."""
    import pyarrow as pa

    return torch.from_numpy(_numpy(array.cast(pa.int32())).copy())


@torch.compiler.disable
def decimals(array) -> torch.Tensor:
    """A decimal column as float64."""
    import pyarrow as pa

    return torch.from_numpy(_numpy(array.cast(pa.float64())).copy())


@torch.compiler.disable
def cents(array) -> torch.Tensor:
    """A DECIMAL(_, 2) column as exact int64 hundredths."""
    return torch.round(decimals(array) * 100).to(torch.int64)


@torch.compiler.disable
def ints(array) -> torch.Tensor:
    """An integer column as int64."""
    return torch.from_numpy(_numpy(array).astype("int64", copy=True))


def dictionary(tables: Tables, name: str, column: str, array) -> list[str]:
    """The sorted distinct values of a string column (the fixed one of `tables.dictionaries`, if any)."""
    fixed = tables.dictionaries.get(f"{name}.{column}")
    if fixed is not None:
        return list(fixed)
    import pyarrow.compute as pc

    return sorted(pc.unique(array).to_pylist())


@torch.compiler.disable
def codes(array, values: list[str]) -> torch.Tensor:
    """int32 codes of a string column into `values` (-1 for a value not in it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = pc.index_in(array, value_set=pa.array(values, array.type))  # string or large_string
    return torch.from_numpy(_numpy(pc.fill_null(found, -1)).astype("int32", copy=True))


@torch.compiler.disable
def encode(tables: Tables, name: str, column: str, array) -> tuple[torch.Tensor, list[str]]:
    """(codes, dictionary) of a string column."""
    values = dictionary(tables, name, column, array)
    return codes(array, values), values


def code_of(values: list[str], text: str) -> int:
    """The code of one string in a dictionary (-1 where it does not occur: nothing matches it)."""
    try:
        return values.index(text)
    except ValueError:
        return -1


@torch.compiler.disable
def like_table(values: list[str], pattern: str) -> torch.Tensor:
    """SQL LIKE evaluated on a dictionary: a bool tensor indexed by code."""
    import pyarrow as pa
    import pyarrow.compute as pc

    matched = pc.match_like(pa.array(values, pa.string()), pattern)
    return torch.tensor(matched.to_pylist(), dtype=torch.bool)


@torch.compiler.disable
def in_table(values: list[str], wanted) -> torch.Tensor:
    """IN (...) evaluated on a dictionary: a bool tensor indexed by code."""
    wanted = set(wanted)
    return torch.tensor([v in wanted for v in values], dtype=torch.bool)


# --- operators (tensor code, used inside `_query_core`) ---


def lookup(build_keys: torch.Tensor, probe_keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sort-merge join on a key unique on the build side: for every probe row, (the build row it
    matches, whether it matches at all)."""
    sorted_keys, order = torch.sort(build_keys)
    at = torch.searchsorted(sorted_keys, probe_keys).clamp(max=max(len(sorted_keys) - 1, 0))
    if len(sorted_keys) == 0:
        return torch.zeros_like(probe_keys), torch.zeros_like(probe_keys, dtype=torch.bool)
    found = sorted_keys[at] == probe_keys
    return order[at], found


def composite(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Two non-negative int keys as one int64 key (b below 2**31)."""
    return a.to(torch.int64) * (1 << 31) + b.to(torch.int64)


def group(*keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Group rows by the key columns: (the sorted distinct key rows [groups, keys], each row's group).

    The keys are packed into one int64 (mixed radix over each key's range: the packed order is the
    tuples' lexicographic order) and grouped with a 1-D `torch.unique`, many times faster than
    `unique(dim=0)`; keys whose ranges do not fit in 62 bits take `unique(dim=0)`."""
    columns = [k.to(torch.int64) for k in keys]
    if len(columns[0]) == 0:
        return torch.zeros(0, len(columns), dtype=torch.int64, device=columns[0].device), columns[0]
    lows = [int(c.min()) for c in columns]
    spans = [int(c.max()) - low + 1 for c, low in zip(columns, lows)]
    if math.prod(spans) >= 1 << 62:
        return torch.unique(torch.stack(columns, dim=1), dim=0, return_inverse=True)
    packed = torch.zeros_like(columns[0])
    for column, low, span in zip(columns, lows, spans):
        packed = packed * span + (column - low)
    unique, inverse = torch.unique(packed, return_inverse=True)
    out = []
    for low, span in reversed(list(zip(lows, spans))):
        out.append(unique % span + low)
        unique = torch.div(unique, span, rounding_mode="floor")
    return torch.stack(out[::-1], dim=1), inverse


def segment_sum(values: torch.Tensor, ids: torch.Tensor, count: int) -> torch.Tensor:
    """Per-group sums of `values` (float64, or int64 for exact sums)."""
    dtype = torch.int64 if not values.dtype.is_floating_point else torch.float64
    return torch.zeros(count, dtype=dtype, device=values.device).index_add_(0, ids, values.to(dtype))


def sql_sum(values: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """SUM over the kept rows, NaN (SQL NULL) when no row is kept."""
    total = torch.where(keep, values, torch.zeros((), dtype=values.dtype, device=values.device)).sum()
    return torch.where(keep.any(), total, torch.full((), float("nan"), dtype=total.dtype, device=total.device))


def segment_count(ids: torch.Tensor, count: int) -> torch.Tensor:
    return torch.bincount(ids, minlength=count).to(torch.int64)


def order_by(columns: list[tuple[torch.Tensor, bool]]) -> torch.Tensor:
    """The row order of ORDER BY over `(values, descending)` pairs, most significant first: stable sorts
    from the least significant key up."""
    n = len(columns[0][0])
    order = torch.arange(n, device=columns[0][0].device)
    for values, descending in reversed(columns):
        _, step = torch.sort(values[order], descending=descending, stable=True)
        order = order[step]
    return order


def year_of(days_: torch.Tensor) -> torch.Tensor:
    """The calendar year of int days since the epoch (proleptic Gregorian, tensor arithmetic)."""
    z = days_.to(torch.int64) + 719468
    era = torch.div(z, 146097, rounding_mode="floor")
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = torch.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2).to(torch.int64)


def table(*columns: torch.Tensor) -> torch.Tensor:
    """The core's result: one float64 matrix, a column per output column."""
    if not columns:
        return torch.zeros(0, 0, dtype=torch.float64)
    return torch.stack([c.to(torch.float64).reshape(-1) for c in columns], dim=1)


# --- decoding the core's result ---


def decode(out: torch.Tensor, columns: tuple[tuple[str, str], ...], dictionaries: dict[str, list[str]]) -> list[tuple]:
    """Python rows of a core's result matrix. `columns` is `(name, kind)` per column: kind `int`,
    `float` (NaN is NULL), `date` (days), or `str:<dictionary name>` (codes into `dictionaries[name]`)."""
    rows = []
    for values in out.tolist():
        row = []
        for value, (_, kind) in zip(values, columns):
            if kind == "int":
                row.append(int(round(value)))
            elif kind == "date":
                row.append(date_of(round(value)))
            elif kind.startswith("str:"):
                row.append(dictionaries[kind[4:]][int(round(value))])
            elif value != value:  # NaN: SQL NULL (a SUM over no rows)
                row.append(None)
            else:
                row.append(float(value))
        rows.append(tuple(row))
    return rows


# --- extraction from a spec ---

ENCODERS = {"date": days, "float": decimals, "cents": cents, "int": ints}


@torch.compiler.disable
def load(tables: Tables, spec: dict[str, dict[str, str]]) -> tuple[dict[str, torch.Tensor], dict[str, list[str]]]:
    """Read and encode columns: `spec` maps a table to `{column: kind}`, kind one of `date`, `float`,
    `cents`, `int`, `str` (codes; its dictionary under the column's name). Returns (tensors by column
    name, dictionaries by column name)."""
    tensors, dictionaries = {}, {}
    for name, columns in spec.items():
        frame = tables.read(name, list(columns))
        for column, kind in columns.items():
            array = frame.column(column)
            if kind == "str":
                tensors[column], dictionaries[column] = encode(tables, name, column, array)
            else:
                tensors[column] = ENCODERS[kind](array)
    return tensors, dictionaries


def merge(partials: torch.Tensor, keys: int) -> torch.Tensor:
    """Partial aggregates of several partitions combined: rows with equal first `keys` columns summed
    (the additive columns are the rest). The rows come out sorted by their keys."""
    if keys == 0:
        return partials.sum(dim=0, keepdim=True)
    unique, inverse = group(*(partials[:, i].round() for i in range(keys)))
    sums = torch.zeros(len(unique), partials.shape[1] - keys, dtype=torch.float64, device=partials.device)
    sums = sums.index_add_(0, inverse, partials[:, keys:])
    return torch.cat([unique.to(torch.float64), sums], dim=1)
