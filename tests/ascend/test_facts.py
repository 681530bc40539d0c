"""The facts the issue names, asserted as data on both targets (the FileCheck goldens show the rest)."""

from __future__ import annotations

import pytest

from diagnose.ascend.facts import EXTRACTORS

from .conftest import FIXTURES, TARGETS, corpus, facts


def named(stem: str, target: str, python: str, name: str, kernel: int = 0) -> list:
    return [e for e in facts(stem, target, python)[kernel][1] if e.name == name]


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
def test_flattened_divmod_is_scalarized_and_the_2d_rewrite_is_structured(target, ascend_toolchain):
    py = ascend_toolchain.python
    [loop] = named("flat_divmod", target, py, "ScalarizedAccess")
    assert loop.kind == "missed" and loop.arg("access") == "load" and loop.arg("elements") == 2048
    assert loop.location.line == 13 and loop.location.path == str(FIXTURES / "flat_divmod.py")
    assert "scf.for" in loop.raw
    assert not named("index_2d", target, py, "ScalarizedAccess")
    load = next(e for e in named("index_2d", target, py, "StructuredAccess") if e.arg("access") == "load")
    assert (load.kind, load.arg("shape"), load.arg("strides")) == ("passed", "16x128", "[stride_row, 1]")
    assert "sizes: [16, 128]" in load.raw


@pytest.mark.parametrize("target", TARGETS)
def test_care_padding_false_removes_the_padding(target, ascend_toolchain):
    py = ascend_toolchain.python
    [padding] = named("care_padding", target, py, "MaskedLoadPadding", kernel=0)
    assert padding.kind == "missed" and padding.location.line == 11 and "linalg.fill" in padding.raw
    assert named("care_padding", target, py, "MaskedLoadPadding", kernel=1) == []


@pytest.mark.parametrize("target", TARGETS)
def test_dot_gives_mix_mode_on_ai_cores(target, ascend_toolchain):
    py = ascend_toolchain.python
    [mode] = named("matmul_dot", target, py, "KernelMode")
    assert mode.arg("mix_mode") == "mix" and mode.arg("core_kind") == "ai_core"
    [vector] = named("vector_add", target, py, "KernelMode")
    assert vector.arg("mix_mode") == "aiv"
    [grid] = named("matmul_dot", target, py, "LaunchGrid")
    assert grid.arg("cores") == {"ascend:910b": 24, "ascend:950": 32}[target]


def test_indirect_load_on_the_950_simt_path(ascend_toolchain):
    py = ascend_toolchain.python
    [mode] = named("indirect_simt", "ascend:950", py, "KernelMode")
    assert mode.arg("parallel_mode") == "mix_simd_simt"
    [simt] = named("indirect_simt", "ascend:950", py, "IndirectAccess")
    assert simt.arg("via") == "simt" and "triton_indirect_load" in simt.raw
    assert named("indirect_simt", "ascend:950", py, "ScalarizedAccess") == []


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_loops_are_credited_to_triton_to_unstructure(target, ascend_toolchain):
    origins = named("gather_indirect", target, ascend_toolchain.python, "PassIntroduced")
    discrete = [e for e in origins if e.arg("marker") == "DiscreteMemAccess"]
    assert discrete and all(e.source == "pass:triton-to-unstructure" and e.stage == "pass" for e in discrete)
    assert discrete[0].location.line == 17


@pytest.mark.parametrize("target", TARGETS)
def test_every_compile_reaches_ttadapter_and_reports_npubin(target, ascend_toolchain):
    for stem, result in corpus(target, ascend_toolchain.python).items():
        for kernel in result["kernels"]:
            stages = {s["name"]: s["status"] for s in kernel["stages"]}
            assert stages["ttir"] == stages["ttadapter"] == "ok", (stem, stages)
            assert stages["npubin"] == ("unavailable" if result["npubin"] else "ok"), (stem, stages)
            # Our per-pass run of triton-adapter-opt ends where the stage itself ends.
            assert kernel["pipeline_matches_stage"] is True, stem
            assert any(p["stage"] == "ttadapter" for p in kernel["passes"])


@pytest.mark.parametrize("target", TARGETS)
def test_the_950_compiles_with_its_own_options(target, ascend_toolchain):
    kernel = corpus(target, ascend_toolchain.python)["vector_add"]["kernels"][0]
    if target == "ascend:950":
        assert kernel["options"]["compile_on_910_95"] is True and kernel["options"]["multibuffer"] is False
        assert "compile-on-910-95=True" in kernel["pipeline"][-1]
    else:
        assert "compile_on_910_95" not in kernel["options"]


@pytest.mark.parametrize("target", TARGETS)
def test_facts_land_on_user_lines(target, ascend_toolchain):
    for path in FIXTURES.glob("*.py"):
        if path.stem not in corpus(target, ascend_toolchain.python):
            continue
        lines = len(path.read_text().splitlines())
        for _kernel, evidence in facts(path.stem, target, ascend_toolchain.python):
            for e in evidence:
                assert e.location and e.location.path == str(path) and 0 < e.location.line <= lines, e
                assert e.stage in ("ir", "pass") and e.raw


def test_every_extractor_has_its_documentation_and_a_fixture_that_shows_it(ascend_toolchain):
    shown = {
        e.name
        for t in TARGETS
        for stem in corpus(t, ascend_toolchain.python)
        for _k, evidence in facts(stem, t, ascend_toolchain.python)
        for e in evidence
    }
    for extractor in EXTRACTORS:
        module = __import__(extractor.func.__module__, fromlist=["_"])
        assert module.__doc__ and "## What it reads" in module.__doc__ and "## Kinds" in module.__doc__
        assert extractor.name in shown, extractor.name
