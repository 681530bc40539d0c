"""The NPU runtime path. Where the Ascend toolchain has torch_npu and sees an NPU, a kernel runs on
the `npu` device; elsewhere those tests are skipped with the reason, and the status says it in one line."""

from __future__ import annotations

import pytest

from diagnose.ascend.npu import npu_call, npu_status
from diagnose.errors import ToolchainError


@pytest.fixture(scope="module")
def npu(ascend_toolchain):
    available, why = npu_status()
    if not available:
        pytest.skip(why)
    return ascend_toolchain


def test_status_is_one_line(ascend_toolchain):
    available, why = npu_status()
    assert "\n" not in why and why
    assert available == (ascend_toolchain.capabilities.get("npu") is None)


def test_npu_call_refuses_with_the_reason_where_there_is_no_npu(ascend_toolchain):
    available, _why = npu_status()
    if available:
        pytest.skip("an NPU is present here")
    with pytest.raises(ToolchainError, match="device npu"):
        npu_call("tests.ascend.entries:npu_vector_add", {})


def test_vector_add_on_the_npu(npu):
    result = npu_call("tests.ascend.entries:npu_vector_add", {}, timeout_s=600)
    assert result.ok, result.failure
    assert result.value["device"].startswith("npu") and result.value["max_error"] == 0.0
