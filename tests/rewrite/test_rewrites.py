"""Every rewrite: in the table, documented, golden before/after, a precondition that says no, idempotent."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import diagnose.rewrite as package
import diagnose.rewrite.codemods as codemods
from diagnose.rewrite.rewrite import SECTIONS, NotApplicable, Rewrite
from diagnose.rewrite.table import CODE_REWRITES, REWRITES, rewrites_for
from tests.conftest import ROOT
from tests.rewrite.goldens import FIXTURES, context, folders, rewritten

EXAMPLES = ROOT / "examples"

IDS = sorted(REWRITES)


def rewrite_classes() -> dict[str, type[Rewrite]]:
    found = {}
    modules = [
        f"{pkg.__name__}.{info.name}"
        for pkg in (package, codemods)
        for info in pkgutil.iter_modules(pkg.__path__)
        if not info.ispkg
    ]
    for module in map(importlib.import_module, modules):
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, Rewrite) and value is not Rewrite and value.__module__ == module.__name__:
                found[value.id] = value
    return found


def test_every_rewrite_module_is_in_the_table_once():
    classes = rewrite_classes()
    assert sorted(classes) == IDS
    assert len(IDS) >= 12
    for rewrite_id, cls in classes.items():
        assert type(REWRITES[rewrite_id]) is cls
        assert cls.__module__ == f"diagnose.rewrite.codemods.{rewrite_id.replace('-', '_')}", (
            "one rewrite per file under codemods/, named for it"
        )


@pytest.mark.parametrize("rewrite_id", IDS)
def test_docstring_is_the_documentation(rewrite_id):
    doc = REWRITES[rewrite_id].doc()
    headings = re.findall(r"^## (.+)$", doc, re.M)
    assert headings == list(SECTIONS), f"{rewrite_id}: sections {headings}"
    safety = doc.split("## Safety", 1)[1].split("##", 1)[0].strip().lower()
    assert safety.startswith(REWRITES[rewrite_id].safety), f"{rewrite_id}: the Safety section says {safety[:20]!r}"


def test_codes_are_triage_or_profiling_codes_and_map_back():
    from diagnose.profiling.codes import CODES
    from diagnose.triage.codes import RULES

    for rewrite in REWRITES.values():
        for code in rewrite.codes:
            assert code in RULES or code in CODES, f"{rewrite.id} answers unknown code {code}"
            assert rewrite.id in rewrites_for(code)
    assert set(CODE_REWRITES) == {c for r in REWRITES.values() for c in r.codes}
    # the codes the examples raise are answered
    for code in ("TRI001", "TRI005", "TRI007", "TRI019"):
        assert rewrites_for(code)


def test_every_rewrite_has_its_fixtures():
    assert sorted(f.name for f in folders()) == IDS
    for folder in folders():
        assert (folder / "before.py").exists() and (folder / "after.py").exists(), folder
        assert list(folder.glob("rejected_*.py")), f"{folder.name}: no rejected_*.py"


@pytest.mark.parametrize("rewrite_id", IDS)
def test_golden_after(rewrite_id):
    folder = FIXTURES / rewrite_id
    assert rewritten(folder) == (folder / "after.py").read_text(), (
        f"{rewrite_id}: output differs from after.py (regenerate with `python -m tests.rewrite.goldens` if intended)"
    )


@pytest.mark.parametrize(
    "rejected", sorted(FIXTURES.glob("*/rejected_*.py")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_precondition_says_no(rejected):
    expected = rejected.read_text().splitlines()[0].removeprefix("# rejects: ")
    pre = REWRITES[rejected.parent.name].check(context(rejected.parent, rejected.name))
    assert not pre.holds
    assert expected in pre.reason, pre.reason
    with pytest.raises(NotApplicable):
        REWRITES[rejected.parent.name].apply(context(rejected.parent, rejected.name))


@pytest.mark.parametrize("rewrite_id", IDS)
def test_not_applied_twice(rewrite_id):
    with pytest.raises(NotApplicable):
        REWRITES[rewrite_id].apply(context(FIXTURES / rewrite_id, "after.py"))


def test_target_gate():
    folder = FIXTURES / "two-level-tiling"
    ctx = context(folder)
    from diagnose.targets import lookup

    gpu = type(ctx)(ctx.source, ctx.path, lookup("cuda:sm90"))
    assert not REWRITES["two-level-tiling"].check(gpu).holds
    assert "meant for npu" in REWRITES["two-level-tiling"].check(gpu).reason


def test_a_source_that_does_not_parse_is_a_no():
    from diagnose.rewrite.rewrite import RewriteContext

    pre = REWRITES["single-pass-row"].check(RewriteContext("def broken(:\n"))
    assert not pre.holds and "does not parse" in pre.reason


def test_triage_names_the_rewrites_that_the_rewrite_table_says_answer_each_code():
    """Triage keeps the ids as data (it must not import libcst); they must be this table's answer."""
    from diagnose.rewrite.table import CODE_REWRITES
    from diagnose.triage.codes import RULES
    from diagnose.triage.rewrite_ids import REWRITE_IDS

    expected = {code: ids for code, ids in CODE_REWRITES.items() if code in RULES}
    assert REWRITE_IDS == expected, f"set diagnose/triage/rewrite_ids.py to {expected}"


def test_triage_findings_carry_their_rewrite_ids():
    from diagnose.triage import triage_source

    source = (EXAMPLES / "matmul.py").read_text()
    findings = triage_source(source, "matmul.py", target="cuda:sm90")
    assert findings and all(f.rewrites == rewrites_for(f.code) for f in findings)
    assert any(f.rewrites for f in findings)


def test_a_two_dimensional_tile_is_retuned_by_its_whole_count():
    """`BLOCK_R x BLOCK_C` with `BLOCK_C = 32` on the host: 1,024 to 8,192 values per program means
    BLOCK_R 32 to 256, never the 1,024 x 32 a one-dimensional count would give."""
    retune = REWRITES["retune-launch"]
    ctx = context(FIXTURES / "add-autotune", "before_positional.py")
    plan = retune.precondition(ctx).plan
    assert (plan.block, plan.rest) == ("BLOCK_R", 32)
    assert retune.default(plan) == {"BLOCK_R": 32, "num_warps": 4}
    assert {v["BLOCK_R"] for v in retune.search_space(ctx, plan)} == {32, 64, 128, 256}


def test_a_memory_bound_matmul_calls_for_larger_tiles():
    """PRF001 on a tl.dot kernel (small tiles re-read A and B, as npukernel matmul_bias on the H200)
    calls for wgmma-tiles, whose precondition holds there; it does not call for it on a kernel without
    a dot."""
    from diagnose.records import Evidence, Finding, Location
    from diagnose.optimizer.pipeline import called_by, context_for, survey

    evidence = (Evidence("profile", "estimate", "Bottleneck", "analysis"),)
    finding = Finding(
        "PRF001", "Memory-bound: 43% of the roofline", "warning", "medium", Location("matmul_bias.py", 40), evidence
    )
    assert called_by(REWRITES["wgmma-tiles"], [finding], ()) == ("PRF001@matmul_bias.py:40",)
    for path, holds in (
        (ROOT / "benchmarks/npukernel/level3/matmul_bias.py", True),
        (ROOT / "benchmarks/npukernel/level1/math_abs.py", False),
    ):
        found = {a.rewrite.id: a for a in survey(context_for(path, [finding], (), "cuda:sm90"))}
        assert found["wgmma-tiles"].precondition.holds is holds, path


@pytest.mark.slow
def test_an_uncoalesced_gather_calls_for_row_program_order(tmp_path):
    """PRF101 (a gather's scattered sectors, as npukernel index_gather on the H200) calls for
    row-program-order; it holds on index_gather, not on a plain elementwise kernel, and the rewritten
    entry stays correct on the interpreter."""
    from diagnose.records import Evidence, Finding, Location
    from diagnose.optimizer.pipeline import called_by, context_for, survey
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, verify

    evidence = (Evidence("profile", "estimate", "Bottleneck", "analysis"),)
    finding = Finding(
        "PRF101", "Uncoalesced global accesses", "warning", "medium", Location("index_gather.py", 34), evidence
    )
    assert called_by(REWRITES["row-program-order"], [finding], ()) == ("PRF101@index_gather.py:34",)
    gather = ROOT / "benchmarks/npukernel/level1/index_gather.py"
    for path, holds in ((gather, True), (ROOT / "benchmarks/npukernel/level1/math_abs.py", False)):
        found = {a.rewrite.id: a for a in survey(context_for(path, [finding], (), "cuda:sm90"))}
        assert found["row-program-order"].precondition.holds is holds, path
    ctx = context_for(gather, [finding], (), "cuda:sm90")
    candidate = tmp_path / "index_gather_row_order.py"
    candidate.write_text(REWRITES["row-program-order"].apply(ctx))
    verdict = verify(load_task(gather, candidate), CheckOptions(seeds=(0, 1), baselines=("eager",)))
    assert verdict.passed, verdict.failure


@pytest.mark.slow
def test_a_tail_bound_matmul_calls_for_split_k(tmp_path):
    """PRF004 (64 programs for 132 SMs: npukernel matmul_split_k on the H200) calls for split-k; it
    holds there, not on matmul_bias (its bias epilogue would be added once per split), and the
    combined candidate the proposer builds there (group-m-swizzle, split-k, wgmma-tiles, in table
    order) stays correct on the interpreter."""
    from diagnose.records import Evidence, Finding, Location
    from diagnose.optimizer.pipeline import build, called_by, context_for, survey
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, verify

    evidence = (Evidence("profile", "roofline", "RooflinePosition", "metric"),)
    finding = Finding(
        "PRF004",
        "Too few programs for the device: 6% of the roofline; 64 programs for 132 SMs",
        "warning",
        "medium",
        Location("matmul_split_k.py", 35),
        evidence,
    )
    assert called_by(REWRITES["split-k"], [finding], ()) == ("PRF004@matmul_split_k.py:35",)
    entry = ROOT / "benchmarks/npukernel/level3/matmul_split_k.py"
    for path, holds in ((entry, True), (ROOT / "benchmarks/npukernel/level3/matmul_bias.py", False)):
        found = {a.rewrite.id: a for a in survey(context_for(path, [finding], (), "cuda:sm90"))}
        assert found["split-k"].precondition.holds is holds, (path, found["split-k"].precondition.reason)
    built = build(context_for(entry, [finding], (), "cuda:sm90"), ["wgmma-tiles", "split-k", "group-m-swizzle"], None)
    assert built.steps == ("group-m-swizzle", "split-k", "wgmma-tiles") and not built.skipped
    candidate = tmp_path / "matmul_split_k_split.py"
    candidate.write_text(built.source)
    verdict = verify(load_task(entry, candidate), CheckOptions(seeds=(0, 1), baselines=("eager",)))
    assert verdict.passed, verdict.failure


def test_a_rewrite_that_trips_on_code_it_did_not_expect_says_no_instead_of_ending_the_run():
    from diagnose.rewrite.rewrite import RewriteContext

    class Tripping(Rewrite):
        id = "tripping"

        def precondition(self, ctx):
            return ()[0]  # a codemod's bug on an idiom it never met

    pre = Tripping().check(RewriteContext("import triton\n"))
    assert not pre.holds and pre.reason.startswith("internal error reading the kernel: IndexError")
