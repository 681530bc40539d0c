"""`inspect_ascend`, end to end on this CPU-only machine: task capture, text, JSON, passes, stages."""

from __future__ import annotations

import json

import pytest

from diagnose.ascend.inspect import inspect_ascend
from diagnose.errors import ToolchainError, UsageError

from .conftest import FIXTURES, ROOT, TARGETS

SOFTMAX = str(ROOT / "examples" / "softmax.py")


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
def test_softmax_task_on_a_cpu_only_machine(target, ascend_toolchain):
    code, text = inspect_ascend(SOFTMAX, target)
    assert code == 0, text
    assert "== softmax_kernel  grid=16384" in text  # the launch captured from ModelNew.forward
    assert "ttadapter ok" in text and "vector-only kernel" in text
    assert "padding fill of 256xf32 (1024 B, value -inf)" in text
    assert "not possible here:" in text or "everything ran here" in text
    if ascend_toolchain.capabilities.get("npubin"):
        assert "npubin (the NPU binary" in text and "not available here" in text
    if ascend_toolchain.capabilities.get("npu"):
        assert "running and timing on an NPU:" in text


def test_json_carries_evidence_and_what_was_not_possible(ascend_toolchain):
    code, text = inspect_ascend(SOFTMAX, "ascend:910b", fmt="json")
    data = json.loads(text)
    assert code == 0 and data["schema"] == "diagnose.ascend.inspect/1"
    [kernel] = data["kernels"]
    names = {e["name"] for e in kernel["evidence"]}
    assert {"KernelMode", "LaunchGrid", "MaskedLoadPadding", "StructuredAccess", "UBFootprint"} <= names
    assert all(e["location"]["path"] == SOFTMAX for e in kernel["evidence"])
    assert "artefacts" not in kernel and kernel["summary"]
    assert data["npubin"] == ascend_toolchain.capabilities.get("npubin")


def test_second_call_is_answered_from_the_cache(ascend_toolchain):
    path = str(FIXTURES / "strided_load.py")
    inspect_ascend(path, "ascend:950")
    code, text = inspect_ascend(path, "ascend:950")
    assert code == 0 and "(stored result)" in text


def test_passes_show_the_pipeline_with_timing(ascend_toolchain):
    code, text = inspect_ascend(str(FIXTURES / "gather_indirect.py"), "ascend:910b", passes=True)
    assert code == 0
    assert "TritonToUnstructure" in text and "CSE (in TritonToUnstructure)" in text
    assert "+1 scf.for" in text and "ttadapter passes:" in text


def test_stage_annotates_the_ttadapter_with_source_lines(ascend_toolchain):
    code, text = inspect_ascend(str(FIXTURES / "gather_indirect.py"), "ascend:950", stage="ttadapter")
    assert code == 0
    line = next(line for line in text.splitlines() if "{ExtractedLoadOrStore}" not in line and "scf.for" in line)
    assert "gather_indirect.py:17 |" in line
    _code, text = inspect_ascend(str(FIXTURES / "gather_indirect.py"), "ascend:950", stage="npubin")
    assert "-- npubin " in text


def test_options_reach_the_compile(ascend_toolchain):
    code, text = inspect_ascend(
        str(FIXTURES / "gather_indirect.py"), "ascend:950", fmt="json", options={"compile_mode": "unstructured_in_simt"}
    )
    names = [e["name"] for e in json.loads(text)["kernels"][0]["evidence"]]
    assert code == 0 and "IndirectAccess" in names and "ScalarizedAccess" not in names


def test_bad_input(ascend_toolchain, tmp_path):
    with pytest.raises(UsageError, match="not an Ascend target"):
        inspect_ascend(SOFTMAX, "cuda:sm90")
    with pytest.raises(UsageError, match="unknown Ascend stage"):
        inspect_ascend(SOFTMAX, "ascend:910b", stage="ttgir")
    with pytest.raises(UsageError, match="no such file"):
        inspect_ascend(str(tmp_path / "missing.py"), "ascend:910b")
    bare = tmp_path / "bare.py"
    bare.write_text("x = 1\n")
    with pytest.raises(UsageError, match="no @triton.jit kernels"):
        inspect_ascend(str(bare), "ascend:910b")
    with pytest.raises(UsageError, match="needs the Ascend 950"):
        inspect_ascend(str(FIXTURES / "indirect_simt.py"), "ascend:910b")


def test_a_kernel_that_does_not_compile_is_reported(ascend_toolchain, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, BLOCK: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, BLOCK), undefined_name)\n\n\n"
        "DIAGNOSE_EXAMPLES = {'k': dict(args=[torch.empty(16)], kwargs=dict(BLOCK=16), grid=(1,))}\n"
    )
    code, text = inspect_ascend(str(broken), "ascend:910b")
    assert code == 1 and "compile failed in source" in text and "undefined_name" in text


def test_without_the_toolchain(monkeypatch, tmp_path):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path))
    with pytest.raises(ToolchainError, match="diagnose toolchain setup ascend"):
        inspect_ascend(SOFTMAX, "ascend:910b")
