"""The question whether cuda is here, asked of the NVIDIA driver (NVML) without importing torch."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from diagnose.toolchain import nvml, placement

FAKE_NVML = """
typedef unsigned int uint;
int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(uint *count) { *count = COUNT; return 0; }
"""


def fake_nvml(tmp_path, count: int) -> str:
    """A shared library with NVML's three entry points, listing `count` GPUs."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build a stand-in NVML")
    source, library = tmp_path / "nvml.c", tmp_path / f"libnvml{count}.so"
    source.write_text(FAKE_NVML.replace("COUNT", str(count)))
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return str(library)


def test_the_drivers_count_is_read_and_hidden_gpus_are_none(tmp_path, monkeypatch):
    library = fake_nvml(tmp_path, 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml.gpus(library) == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert nvml.gpus(library) == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert nvml.gpus(library) == 0


def test_no_driver_library_is_no_answer(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml.gpus(str(tmp_path / "libnvidia-ml.so.1")) is None
    (tmp_path / "not_a_library.so").write_text("text")
    assert nvml.gpus(str(tmp_path / "not_a_library.so")) is None


def test_torchs_build_is_read_without_importing_it():
    code = "from diagnose.toolchain import nvml; import sys; print(nvml.torch_cuda(), 'torch' in sys.modules)"
    answer, imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split()
    assert imported == "False"
    import torch

    assert answer == str(torch.version.cuda is not None)


def test_a_driver_with_no_gpu_refuses_cuda_before_torch_is_imported(monkeypatch):
    monkeypatch.setattr(nvml, "gpus", lambda: 0)
    where, why = placement.placement("cuda")
    assert where is None and why == "device cuda is not available here (no CUDA GPU visible); use --device cpu"


def test_listed_gpus_and_a_cuda_build_place_cuda_without_asking_torch(monkeypatch):
    monkeypatch.setattr(nvml, "gpus", lambda: 1)
    monkeypatch.setattr(nvml, "torch_cuda", lambda: True)
    where, why = placement.placement("cuda")
    assert where is not None and where.device == "cuda" and why == ""


def test_a_cpu_build_on_a_gpu_host_lets_torch_answer(monkeypatch):
    import torch

    monkeypatch.setattr(nvml, "gpus", lambda: 1)
    monkeypatch.setattr(nvml, "torch_cuda", lambda: False)
    where, _ = placement.placement("cuda")
    assert (where is not None) == torch.cuda.is_available()
