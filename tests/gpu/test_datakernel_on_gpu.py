"""DataKernelBench on a CUDA device at SF 0.01: every TorchPlan's core gives on the device what it
gives on the CPU, the eight Triton cores verify and are timed beside the compiled TorchPlan, and the
out-of-core runner streams through the device."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.bench.suites import datakernel, datakernel_data, datakernel_stream
from diagnose.bench.sweep import SweepOptions

pytestmark = pytest.mark.gpu

SUITE = datakernel.default_root()
KERNELS = ("q01", "q03", "q05", "q06", "q10", "q12", "q14", "q19")


@pytest.fixture(scope="module")
def tpch(tmp_path_factory) -> Path:
    return datakernel_data.dataset(0.01, tmp_path_factory.mktemp("datakernel"))


@pytest.mark.parametrize("path", datakernel_data.query_files(SUITE), ids=lambda p: p.stem)
def test_the_core_on_the_device_matches_the_cpu(tpch, path):
    import torch

    module = datakernel_data.load_query(path)
    tensors, scalars, _ = module.extract(datakernel_data.tables_of(tpch))
    here = module._query_core(tensors, scalars)
    there = module._query_core({k: v.cuda() for k, v in tensors.items()}, scalars).cpu()
    torch.testing.assert_close(there, here, rtol=1e-9, atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("kind", datakernel.KINDS)
@pytest.mark.parametrize("query", KERNELS)
def test_kernels_verify_and_are_timed_against_the_compiled_torchplan(tpch, monkeypatch, query, kind):
    monkeypatch.setenv("DIAGNOSE_DATAKERNEL_DIR", str(tpch.parent))
    options = SweepOptions(
        suite_format="datakernel", device="cuda", pattern=f"{kind}/{query}", scale_factor=0.01, timeout_s=600
    )
    [task] = datakernel.load(SUITE, options)
    [(_, status, data)] = datakernel.score(task, options)
    assert status == "passed", data
    assert data["speedup_vs_compile"] is not None


@pytest.mark.parametrize("query", ("q01", "q06", "q14"))
def test_streaming_through_the_device(tpch, query):
    run = datakernel_stream.validate_streamed(SUITE / f"{query}.py", tpch, device="cuda", partition_rows=16384)
    assert run.ok and run.partitions >= 4, run
