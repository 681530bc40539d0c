"""DataKernelBench out of core: every streamable TorchPlan run over lineitem in at least four Dask
partitions (forced small) matches DuckDB at SF 0.01; the partition size follows free memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.bench.suites import datakernel_data as data
from diagnose.bench.suites import datakernel_stream as stream
from diagnose.bench.suites.datakernel_data import ROW_GROUP_ROWS

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "datakernel"
STREAMABLE = ("q01", "q03", "q05", "q06", "q07", "q08", "q09", "q10", "q12", "q14", "q19")


def test_the_streamable_queries_are_those_the_runner_documents():
    found = tuple(p.stem for p in data.query_files(SUITE) if stream.streamable(data.load_query(p)))
    assert found == STREAMABLE
    line = next(x for x in stream.__doc__.split("\n\n") if x.startswith("Streamable:"))
    documented = line.split(":", 1)[1].split(":", 1)[0].replace(" ", "").split(",")
    assert documented == [f"Q{int(q[1:])}" for q in STREAMABLE]


@pytest.mark.parametrize("query", STREAMABLE)
def test_streamed_partitions_match_duckdb(tpch, query):
    seen = []
    run = stream.validate_streamed(
        SUITE / f"{query}.py",
        tpch,
        partition_rows=ROW_GROUP_ROWS,
        on_partition=lambda done, total: seen.append((done, total)),
    )
    assert run.ok, run.detail
    assert run.partitions >= 4 and seen[-1] == (run.partitions, run.partitions)


def test_the_partition_size_follows_free_memory(monkeypatch):
    monkeypatch.setattr(stream, "free_bytes", lambda device: 2**30)
    assert stream.rows_for(32, "cuda") == int(2**30 * stream.MEMORY_SHARE / (32 * stream.OVERHEAD))


def test_a_query_that_cannot_stream_says_so(tpch):
    from diagnose.errors import UsageError

    with pytest.raises(UsageError, match="q18 is not streamable"):
        stream.validate_streamed(SUITE / "q18.py", tpch)


def test_the_command_prints_each_row_as_its_query_ends(tpch_root, monkeypatch, capsys):
    """A run cut short by an outer time limit keeps the rows of the queries that ended: the second
    query's run sees the first one's row printed already."""
    monkeypatch.setenv("DIAGNOSE_DATAKERNEL_DIR", str(tpch_root))
    real, printed_before = stream.validate_streamed, []

    def validate(path, *args, **kwargs):
        printed_before.append(capsys.readouterr().out)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(stream, "validate_streamed", validate)
    assert stream.stream_command(SUITE, 0.01, "q06,q14", "cpu", ROW_GROUP_ROWS) == 0
    assert printed_before[0].startswith("query") and "q06" not in printed_before[0]
    assert printed_before[1].splitlines()[-1].split()[0] == "q06" and printed_before[1].rstrip().endswith("match")
    assert capsys.readouterr().out.split()[0] == "q14"
