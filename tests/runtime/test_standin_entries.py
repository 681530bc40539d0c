"""Which workers get the CPU stand-in where a GPU is visible: the offline-compiling ones (they run the
user's host code on CPU or meta tensors, so its device queries must be answered as the target would),
not those that run and time on the GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import torch
torch.cuda.is_available = lambda: True   # as on a GPU machine
from diagnose.runtime.worker import install_standin
install_standin({entry!r})
try:
    print(torch.cuda.get_device_properties(torch.empty(1).device).multi_processor_count)
except Exception as exc:
    print(type(exc).__name__)
"""


def answer(entry: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(entry=entry)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_an_offline_compile_answers_device_queries_on_cpu_tensors_even_beside_a_gpu():
    for entry in (
        "diagnose.optimizer.jobs:static_batch",
        "diagnose.profiling.jobs:static_job",
        "diagnose.ir.inspect:inspect_file",
    ):
        assert answer(entry) == "132", entry


def test_a_worker_that_runs_on_the_gpu_gets_no_standin():
    assert answer("diagnose.verify.jobs:time_job") != "132"
