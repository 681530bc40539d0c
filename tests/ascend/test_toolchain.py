"""The toolchain: its environment (made once per session), its record, its worker protocol, its verbs."""

from __future__ import annotations

import pytest

from diagnose.errors import UsageError
from diagnose.toolchain import call, toolchain_list, toolchain_setup
from diagnose.toolchain.config import (
    ToolchainRecord,
    find_record,
    load_records,
    save_record,
)

from tests.conftest import TOOLCHAIN_ROOT


def test_environment_holds_triton_ascend_and_cpu_torch(ascend_toolchain):
    versions = dict(ascend_toolchain.versions)
    assert versions["triton-ascend"] == "3.2.0"
    assert versions["torch"].startswith("2.13.0")  # triton-ascend 3.2.0 compiles and interprets with it
    assert tuple(int(x) for x in versions["numpy"].split(".")[:2]) < (2, 4)
    assert ascend_toolchain.capabilities["ok"] and ascend_toolchain.capabilities["stages"]["ttadapter"]


def test_worker_protocol_runs_in_the_toolchain_interpreter(ascend_toolchain):
    result = call(
        "tests.ascend.entries:versions",
        {},
        python=ascend_toolchain.python,
        timeout_s=300,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result.ok, result.failure
    assert result.value["triton"] == "3.2.0" and result.value["triton_ascend"] == "3.2.0"
    assert result.value["triton_file"].startswith(ascend_toolchain.venv)  # its own triton, not upstream's


def test_interpreter_works_with_the_toolchain_torch(ascend_toolchain):
    result = call(
        "tests.ascend.entries:interpret_add", {}, python=ascend_toolchain.python, timeout_s=300, interpret=True
    )
    assert result.ok, result.failure
    assert result.value == {"add": True, "sum": True}


def test_missing_interpreter_is_a_failure_not_a_crash(tmp_path):
    result = call("tests.ascend.entries:versions", {}, python=str(tmp_path / "no-python"), timeout_s=30)
    assert not result.ok and result.failure.kind == "load_error"


def test_setup_reuses_a_working_environment(ascend_toolchain):
    code, text = toolchain_setup("ascend", root=TOOLCHAIN_ROOT)
    assert code == 0
    assert "already set up and working (reused)" in text
    assert "compiles to ttir, ttadapter" in text


def test_list_shows_what_the_toolchain_can_do_here(ascend_toolchain):
    code, text = toolchain_list(TOOLCHAIN_ROOT)
    assert code == 0
    assert "ascend: set up" in text and "triton-ascend 3.2.0" in text
    assert "compiles to ttir, ttadapter" in text
    if ascend_toolchain.capabilities.get("npubin"):
        assert "npubin: not available here" in text
    assert "timing:" in text and "main environment: triton" in text


def test_list_when_nothing_is_set_up(tmp_path):
    code, text = toolchain_list(tmp_path)
    assert code == 0
    assert "ascend: not set up" in text and "diagnose toolchain setup ascend" in text


def test_unknown_toolchain():
    with pytest.raises(UsageError, match="known toolchains: ascend"):
        toolchain_setup("rocm")


def test_records_round_trip_and_ignore_a_broken_file(tmp_path):
    record = ToolchainRecord(
        "ascend", "/usr/bin/python3", "/x/venv", ("a==1",), (("a", "1"),), "now", 1.0, {"ok": True}
    )
    save_record(record, tmp_path)
    assert load_records(tmp_path)["ascend"] == record
    assert find_record("ascend", tmp_path) == record
    (tmp_path / "toolchains.json").write_text("{not json")
    assert load_records(tmp_path) == {}


@pytest.mark.slow
def test_a_failed_install_raises_with_a_reproducer_and_records_nothing(tmp_path):
    import dataclasses

    from diagnose.errors import ToolchainError
    from diagnose.toolchain.install import create
    from diagnose.toolchain.specs import ASCEND

    broken = dataclasses.replace(ASCEND, requirements=("not a valid requirement ===",))
    with pytest.raises(ToolchainError, match="failed .*rerun with:"):
        create(broken, tmp_path)
    assert find_record("ascend", tmp_path) is None
