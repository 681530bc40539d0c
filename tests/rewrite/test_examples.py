"""`rewrite_command` on the four examples: the rewrites one expects, verified on CPU, written beside the
input; the matmul candidate's offline IR for cuda:sm90 uses wgmma where the original used mma.sync."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from diagnose.errors import UsageError
from diagnose.optimizer.command import rewrite_command
from tests.conftest import EXAMPLES

EXPECTED = {
    "vector_add": ("retune-launch",),
    "softmax": ("single-pass-row", "online-softmax"),
    "layernorm": ("single-pass-row",),
    "matmul": ("group-m-swizzle", "wgmma-tiles"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Each example copied to a folder of its own and rewritten (search, estimate, verification)."""
    folder = tmp_path_factory.mktemp("examples")
    paths = {}
    for name in EXPECTED:
        paths[name] = folder / f"{name}.py"
        shutil.copy(EXAMPLES / f"{name}.py", paths[name])
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = dict(zip(EXPECTED, pool.map(lambda n: rewrite_command(str(paths[n]), None), EXPECTED)))
    return {name: (paths[name], *outcomes[name]) for name in EXPECTED}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECTED))
def test_example_gets_the_expected_rewrites_verified(results, name):
    path, code, text = results[name]
    assert code == 0, text
    assert f"rewrites: {', '.join(EXPECTED[name])} (safe)" in text
    assert "verification on cpu: passed" in text
    assert "not timed (no device here)" in text
    written = path.with_name(f"{name}.diagnose.py")
    assert f"wrote {written}" in text
    assert written.read_text() != path.read_text()
    assert path.read_text() == (EXAMPLES / f"{name}.py").read_text(), "the input is never touched"
    assert f"+++ b/{name}.diagnose.py" in text


def test_vector_add_block_is_bigger(results):
    path, _, text = results["vector_add"]
    source = path.with_name("vector_add.diagnose.py").read_text()
    block = int(re.search(r"BLOCK_SIZE = (\d+)", source)[1])
    warps = int(re.search(r"num_warps=(\d+)", source)[1])
    assert block >= 1024 and block // (32 * warps) >= 4, (block, warps)
    assert "ranked by static estimate" in text and "not a measurement" in text


@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_rows_become_single_pass(results, name):
    path, _, text = results[name]
    source = path.with_name(f"{name}.diagnose.py").read_text()
    twin = source.split(f"def {name}_kernel_single_block", 1)[1].split("\nclass ", 1)[0]
    assert "for " not in twin, "the single-block kernel has no loop over the row"
    assert twin.count("tl.load(x_row") == 1, "the row is loaded once"
    assert "triton.next_power_of_2(n_cols)" in source and "else:" in source
    assert "TRI007@" in text


def test_matmul_tiles_and_swizzle(results):
    path, _, _ = results["matmul"]
    source = path.with_name("matmul.diagnose.py").read_text()
    m, n, k = (int(v) for v in re.search(r"BLOCK_M, BLOCK_N, BLOCK_K = (\d+), (\d+), (\d+)", source).groups())
    warps = int(re.search(r"num_warps=(\d+)", source)[1])
    assert m >= 64 and n >= 64 and k >= 32 and warps >= 4
    assert m // (warps // 4) >= 64, "wgmma needs M >= 64 per warpgroup"
    assert "GROUP_M=8" in source and "grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)" in source


@pytest.mark.slow
def test_matmul_candidate_ir_uses_wgmma(results):
    from diagnose.cache import cache_root
    from diagnose.ir.cli import run_worker

    def engines(file: Path) -> set[str]:
        payload = {
            "path": str(file),
            "target": "cuda:sm90",
            "passes": False,
            "diff_pass": None,
            "stage": None,
            "kernel": None,
            "cache_root": str(cache_root()),
        }
        result = run_worker(payload)
        return {
            dict(e["args"]).get("engine")
            for k in result["kernels"]
            for e in k["evidence"]
            if e["name"] == "DotLowering"
        }

    path, _, _ = results["matmul"]
    assert engines(path) == {"mma_v2"}
    assert engines(path.with_name("matmul.diagnose.py")) == {"wgmma"}


def test_second_run_keeps_the_first_output(results):
    path, _, _ = results["softmax"]
    first = path.with_name("softmax.diagnose.py").read_text()
    code, text = rewrite_command(str(path), ["single-pass-row"], search_configs=False, verify_candidate=False)
    assert code == 0
    assert "softmax.diagnose.py exists (left as it is); wrote" in text
    assert path.with_name("softmax.diagnose.2.py").exists()
    assert path.with_name("softmax.diagnose.py").read_text() == first


@pytest.mark.slow
def test_write_replaces_the_input_only_when_verified(tmp_path):
    path = tmp_path / "layernorm.py"
    shutil.copy(EXAMPLES / "layernorm.py", path)
    code, text = rewrite_command(str(path), ["TRI007"], write=True, search_configs=False)
    assert code == 0, text
    assert "wrote over" in text and "layernorm_kernel_single_block" in path.read_text()
    assert not path.with_name("layernorm.diagnose.py").exists()


@pytest.mark.slow
def test_list_says_what_applies_and_why(results):
    path, _, _ = results["matmul"]
    code, text = rewrite_command(str(path), None, list_only=True)
    assert code == 0
    rows = {line.split()[0]: line for line in text.splitlines()[1:]}
    assert "applies" in rows["wgmma-tiles"] and "TRI005@matmul.py:60" in rows["wgmma-tiles"]
    assert "applies" in rows["group-m-swizzle"] and "TRI019@matmul.py:28" in rows["group-m-swizzle"]
    assert " no " in rows["single-pass-row"]
    assert "meant for npu" in rows["two-level-tiling"]


@pytest.mark.parametrize(
    "apply, message",
    [
        (["no-such-rewrite"], "unknown rewrite or code"),
        (["group-m-swizzle"], "group-m-swizzle does not apply to vector_add.py"),
        (["TRI019"], "no rewrite for TRI019 applies"),
    ],
)
def test_usage_errors(tmp_path, apply, message):
    path = tmp_path / "vector_add.py"
    shutil.copy(EXAMPLES / "vector_add.py", path)
    with pytest.raises(UsageError, match=message):
        rewrite_command(str(path), apply, search_configs=False, verify_candidate=False)


def test_missing_file_and_bad_target(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        rewrite_command(str(tmp_path / "nope.py"), None)
    shutil.copy(EXAMPLES / "softmax.py", tmp_path / "softmax.py")
    with pytest.raises(UsageError, match="unknown target"):
        rewrite_command(str(tmp_path / "softmax.py"), None, target="cuda:sm42")
