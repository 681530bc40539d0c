"""Per-pass recording: pipelines, restoration of what was wrapped, snapshots, diffs, op history."""

from __future__ import annotations

import re

import pytest

from diagnose.errors import UsageError
from diagnose.ir.pass_analysis import find_steps, op_history, pass_diff, timeline
from diagnose.ir.passes import pipeline_name

from .conftest import compiled


@pytest.fixture(scope="module")
def matmul_passes():
    return compiled("matmul_wgmma", "cuda:sm90", snapshots=True)[0][1]


def test_pipeline_is_recorded():
    record = compiled("matmul_wgmma", "cuda:sm90")[0][1]
    names = [s.name for s in record.steps]
    for expected in (
        "convert-triton-to-tritongpu",
        "tritongpu-accelerate-matmul",
        "tritongpu-pipeline",
        "convert-triton-gpu-to-llvm",
    ):
        assert expected in names
    assert {s.stage for s in record.steps} == {"make_ttir", "make_ttgir", "make_llir"}
    amd = [s.name for s in compiled("matmul_wgmma", "hip:gfx942")[0][1].steps]
    assert "tritonamdgpu-pipeline" in amd and "tritonamdgpu-convert-buffer-ops" in amd


def test_wrapped_functions_are_restored():
    from triton._C.libtriton import ir, passes

    from diagnose.ir.passes import record_passes

    original_pm, original_add = ir.pass_manager, passes.ttgpuir.add_coalesce
    with record_passes():
        assert ir.pass_manager is not original_pm
        assert passes.ttgpuir.add_coalesce is not original_add
    assert ir.pass_manager is original_pm and passes.ttgpuir.add_coalesce is original_add


def test_snapshots_do_not_change_the_compile(matmul_passes):
    plain = compiled("matmul_wgmma", "cuda:sm90")[0][1]
    assert matmul_passes.hash == plain.hash
    for stage in ("ttgir", "ptx"):
        assert _without_paths(matmul_passes.asm[stage]) == _without_paths(plain.asm[stage]), stage


def _without_paths(text: str) -> str:
    """IR with its debug locations' file names blanked: Triton's cache is keyed by the source, so a
    compile may come back with the path of another copy of the same fixture (a test that copies
    `_matmul.py` to its tmp folder, run earlier in the same worker)."""
    text = text.split("\t.section\t.debug", 1)[0]  # PTX's DWARF sections: lengths that count the path
    text = re.sub(r'loc\("[^"]*"', 'loc("FILE"', text)
    return re.sub(r'(\.file\s+\d+\s+)"[^"]*"(\s+"[^"]*")?', r'\1"FILE"', text)


def test_timeline_says_which_pass_did_what(matmul_passes):
    rows = {r.name: r for r in timeline(matmul_passes)}
    assert ("ttng.warp_group_dot", 1) in rows["tritongpu-accelerate-matmul"].added
    assert any(op == "ttg.async_copy_global_to_local" for op, _ in rows["tritongpu-pipeline"].added)
    assert rows["convert-triton-gpu-to-llvm"].lines_after > 10 * rows["convert-triton-gpu-to-llvm"].lines_before


def test_op_history(matmul_passes):
    history = op_history(matmul_passes, "ttg.convert_layout")
    assert history and all(h.before != h.after for h in history)
    introduced = op_history(matmul_passes, "ttng.warp_group_dot", line=21)
    assert introduced[0].name == "tritongpu-accelerate-matmul" and (introduced[0].before, introduced[0].after) == (0, 1)


def test_pass_diff(matmul_passes):
    diff = pass_diff(matmul_passes, "tritongpu-pipeline")
    assert "+" in diff and "async_copy_global_to_local" in diff and "loc(" not in diff
    with pytest.raises(UsageError, match="passes: .*tritongpu-coalesce"):
        find_steps(matmul_passes, "no-such-pass")


def test_timeline_needs_snapshots():
    with pytest.raises(UsageError, match="snapshots=True"):
        timeline(compiled("elementwise_2d", "cuda:sm90")[0][1])  # never compiled with snapshots


def test_remarks_are_attributed_to_passes():
    record = compiled("matmul_small_tile", "cuda:sm90")[0][1]
    diag = record.diagnostics()
    assert [(d.pass_name, d.line) for d in diag] == [("tritongpu-accelerate-matmul", 21)]
    assert diag[0].notes == ("Target compute capability (90) supports MMA v3.",)


def test_pipeline_names():
    assert pipeline_name("any(tritongpu-coalesce)") == "tritongpu-coalesce"
    assert pipeline_name("any(llvm.func(canonicalize-llvm-ir))") == "canonicalize-llvm-ir"
    assert pipeline_name("any(canonicalize{  max-iterations=10 })") == "canonicalize"


@pytest.mark.parametrize(
    "target, engine",
    [("cuda:sm80", "mma_v2"), ("cuda:sm100", "tcgen05"), ("hip:gfx950", "mfma")],
)
def test_every_target_compiles_under_the_recorder(target, engine):
    from .conftest import facts

    [(_, evidence)] = facts("matmul_tma", target)
    [dot] = [e for e in evidence if e.name == "DotLowering"]
    assert dot.arg("engine") == engine and dot.kind == "passed"
    assert compiled("matmul_tma", target)[0][1].steps  # the passes were replayed one by one
