"""Counting a task's work without a device: on `meta`, from hints alone, or on CPU tensors."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

from diagnose.profiling.work import count_work, count_work_offline
from diagnose.verify.inputs import draw

ROOT = Path(__file__).resolve().parents[2]

HEADER = """
import torch
import torch.nn as nn

def get_init_inputs():
    return []
"""


def load(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_matmul_is_counted_on_meta(tmp_path):
    task = load(
        tmp_path,
        "mm",
        """
        class Model(nn.Module):
            def forward(self, a, b):
                return a @ b

        def get_input_groups():
            return {"big": lambda: [torch.randn(4096, 2048), torch.randn(2048, 1024)]}
    """,
    )
    work, how = count_work_offline(task, "big")
    assert how == "meta"
    assert work.flops == 2 * 4096 * 2048 * 1024 and work.flops_source == "FlopCounterMode"
    assert work.bytes == 4 * (4096 * 2048 + 2048 * 1024 + 4096 * 1024)


def test_a_task_hinting_bytes_and_flops_is_not_run(tmp_path):
    task = load(
        tmp_path,
        "hinted",
        """
        ROOFLINE = {"bytes": lambda inputs: 3 * inputs[0].numel(), "flops": 12.0}

        class Model(nn.Module):
            def forward(self, x):
                raise RuntimeError("the reference ran")

        def get_input_groups():
            return {"g": lambda: [torch.randn(1000, dtype=torch.float16)]}
    """,
    )
    work, how = count_work_offline(task, "g")
    assert how == "hints"
    assert (work.bytes, work.flops, work.dtype) == (3000.0, 12.0, "fp16")
    assert work.bytes_source == work.flops_source == "ROOFLINE hint"


def test_a_reference_reading_tensor_values_falls_back_to_cpu_tensors(tmp_path):
    task = load(
        tmp_path,
        "values",
        """
        class Model(nn.Module):
            def forward(self, x, n):
                return x[: int(n.item())] * 2

        def get_input_groups():
            return {"g": lambda: [torch.randn(64), torch.tensor(10)]}
    """,
    )
    work, how = count_work_offline(task, "g")
    assert how == "cpu"
    assert work.bytes == 64 * 4 + 8 + 10 * 4


def test_grouped_matmul_is_counted_from_its_hints_which_agree_with_the_counters():
    spec = importlib.util.spec_from_file_location(
        "matmul_grouped", ROOT / "benchmarks" / "npukernel" / "level3" / "matmul_grouped.py"
    )
    task = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(task)
    for group in task.get_input_groups():
        work, how = count_work_offline(task, group)
        assert how == "hints", group
        assert work.flops > 0 and work.bytes > 0
    inputs, _ = draw(task, "test_g3_m1to70_n40_k48_fp16", 0)
    hinted = count_work(task, task.Model(), inputs, "test")
    counted = count_work(type("Unhinted", (), {}), task.Model(), inputs, "test")
    assert (hinted.bytes, hinted.flops) == (counted.bytes, counted.flops)
    assert counted.flops_source == "FlopCounterMode"
