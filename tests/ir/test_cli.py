"""`inspect_command`: formats, modes, cache, exit codes and one-line errors."""

from __future__ import annotations

import json

import pytest

from diagnose.errors import UsageError
from diagnose.ir import cli
from diagnose.ir.inspect import inspect_file
from diagnose.runtime.runner import WorkerResult

from .conftest import FIXTURES


@pytest.fixture
def in_process(monkeypatch):
    """Run the worker function in this process (the subprocess path has its own test)."""
    monkeypatch.setattr(cli, "call", lambda entry, payload, timeout_s: WorkerResult(True, inspect_file(payload)))


def fixture(name: str) -> str:
    return str(FIXTURES / f"{name}.py")


@pytest.mark.slow
def test_worker_subprocess_json_then_warm_cache(ir_cache, monkeypatch):
    code, out = cli.inspect_command(fixture("vec_add_mask_unaligned"), fmt="json")
    data = json.loads(out)
    assert code == 0 and data["schema"] == "diagnose.ir.inspect/1" and data["target"] == "cuda:sm90"
    [kernel] = data["kernels"]
    missed = [e for e in kernel["evidence"] if e["name"] == "GlobalAccessWidth" and e["kind"] == "missed"]
    assert {e["location"]["line"] for e in missed} == {11, 12, 13}
    assert dict(map(tuple, missed[0]["args"]))["reason"] == "mask_bound_not_divisible"
    assert (ir_cache / ".gitignore").read_text() == "*\n" and (ir_cache / "CACHEDIR.TAG").exists()

    def no_worker(payload):
        raise AssertionError("the warm path must not start a worker")

    monkeypatch.setattr(cli, "run_worker", no_worker)
    warm_code, warm_out = cli.inspect_command(fixture("vec_add_mask_unaligned"), fmt="json")
    warm = json.loads(warm_out)
    assert warm_code == code and warm.pop("from_cache") is True and data.pop("from_cache") is False
    assert warm == data


def test_text_table_for_a_task(in_process):
    code, out = cli.inspect_command(fixture("task_vector_add"))
    assert code == 0
    assert "== add_kernel" in out and "grid=5" in out
    assert "task_vector_add.py:18   | x = tl.load(x_ptr + offsets, mask=mask)" in out
    assert "! load 32-bit x8 (mask_bound_not_divisible: mask bound n_elements is not a multiple of 16)" in out


def test_passes_timeline_and_diff(in_process):
    code, out = cli.inspect_command(fixture("matmul_wgmma"), passes=True)
    assert code == 0 and "tritongpu-pipeline" in out and "+1 ttng.warp_group_dot" in out
    code, out = cli.inspect_command(fixture("matmul_wgmma"), diff_pass="tritongpu-accelerate-matmul")
    assert code == 0 and "+++ after make_ttgir/tritongpu-accelerate-matmul" in out and "ttng.warp_group_dot" in out


def test_stage_is_annotated_with_source_lines(in_process):
    code, out = cli.inspect_command(fixture("vec_add_aligned"), stage="ptx")
    assert code == 0
    assert any(
        line.strip().startswith("vec_add_aligned.py:11 |") and "ld.global.v4.b32" in line for line in out.splitlines()
    )
    code, out = cli.inspect_command(fixture("vec_add_aligned"), target="hip:gfx942", stage="amdgcn")
    assert any("vec_add_aligned.py:13 |" in line and "buffer_store_dwordx4" in line for line in out.splitlines())


def test_compile_failure_is_exit_1(in_process):
    code, out = cli.inspect_command(fixture("_broken"))
    assert code == 1 and "compile failed" in out and "undefined_helper" in out


def test_a_kernel_over_the_shared_memory_limit_is_exit_1(in_process):
    code, out = cli.inspect_command(fixture("matmul_big_smem"))
    assert code == 1 and "B over the 232448 B limit" in out
    assert cli.inspect_command(fixture("vec_add_aligned"))[0] == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(path="nope.py"), "no such file: nope.py"),
        (dict(path=__file__.replace(".py", ".txt")), "no such file"),
        (dict(target="cuda:sm75"), "unknown target 'cuda:sm75'; known targets:"),
        (dict(target="ascend:910b"), "cannot compile here"),
        (dict(stage="bogus"), "unknown stage 'bogus'"),
        (dict(fmt="yaml"), "unknown format 'yaml'"),
        (dict(path=fixture("_no_examples")), "no example arguments"),
        (dict(kernel="other_kernel"), "no example launch of kernel 'other_kernel'"),
        (dict(diff_pass="no-such-pass"), "no pass 'no-such-pass' in this compile; passes:"),
    ],
)
def test_bad_input_is_one_line_usage_error(in_process, kwargs, message):
    kwargs = {"path": fixture("vec_add_aligned"), **kwargs}
    with pytest.raises(UsageError, match=message) as e:
        cli.inspect_command(**kwargs)
    assert "\n" not in str(e.value) and e.value.exit_code == 2


@pytest.mark.slow
def test_stored_result_is_dropped_when_an_imported_file_changes(ir_cache, tmp_path):
    # A real worker: in this process an earlier test may already hold `_matmul` in sys.modules.
    import shutil

    for name in ("matmul_wgmma.py", "_matmul.py"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    path = str(tmp_path / "matmul_wgmma.py")
    code, out = cli.inspect_command(path)
    assert code == 0 and "_matmul.py:21" in out
    payload = {
        "path": path,
        "target": "cuda:sm90",
        "passes": False,
        "diff_pass": None,
        "stage": None,
        "kernel": None,
        "cache_root": str(cli.cache_root().resolve()),
    }
    assert cli.cached_result(payload) is not None
    with open(tmp_path / "_matmul.py", "a") as f:
        f.write("\n# edited\n")
    assert cli.cached_result(payload) is None


def test_a_failure_inside_a_called_function_says_what_failed(in_process):
    """Triton reports it at the call ("at 2:4: ^"); the cause, inside the helper, is what to read."""
    code, out = cli.inspect_command(fixture("_broken_in_helper"))
    assert code == 1 and "arange's end argument must be greater than the start argument" in out
