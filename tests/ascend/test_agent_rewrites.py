"""The agent's Ascend path hands Ascend IR facts and Ascend triage findings to the rewrite proposer,
and the Ascend rewrites come out where the facts show the problem: a flattened `//`/`%` index that
compiled to a scalar loop gets the 2-D index; a grid of more programs than vector cores gets the
persistent grid; a single-pass kernel gets two-level tiling. Today the triage findings are what
call for them; the IR facts alone do not (the expected failure below says where that is missing)."""

from __future__ import annotations

import pytest

from diagnose.agent.tools import Tools
from tests.conftest import EXAMPLES, FIXTURES

TARGET = "ascend:950"
FLAT_DIVMOD = FIXTURES / "rewrite" / "structured-2d-index" / "before.py"


def evidence_and_proposals(path, tmp_path, with_findings: bool = True):
    tools = Tools(str(tmp_path))
    evidence = tools.inspect_ascend(str(path), TARGET)
    findings = tools.triage(str(path), TARGET) if with_findings else []
    proposals = tools.propose(str(path), str(path), findings, evidence, TARGET, [])
    return evidence, {rewrite for p in proposals for rewrite in p["made_by"]}


def missed(evidence: list[dict], name: str, **args) -> list[dict]:
    return [
        e
        for e in evidence
        if e["name"] == name
        and e["kind"] == "missed"
        and all(dict(map(tuple, e["args"])).get(k) == v for k, v in args.items())
    ]


@pytest.mark.slow
def test_flattened_divmod_gets_the_2d_index(ascend_toolchain, tmp_path):
    evidence, proposed = evidence_and_proposals(FLAT_DIVMOD, tmp_path)
    (scalar_store,) = missed(evidence, "ScalarizedAccess", access="store")
    assert scalar_store["location"]["line"] == 19  # tl.store(out_ptr + col * n_rows + row, ...)
    assert "structured-2d-index" in proposed


@pytest.mark.slow
def test_grid_over_the_core_count_gets_the_persistent_grid_and_tiling(ascend_toolchain, tmp_path):
    evidence, proposed = evidence_and_proposals(EXAMPLES / "vector_add.py", tmp_path)
    (grid,) = missed(evidence, "LaunchGrid")
    assert dict(map(tuple, grid["args"]))["cores"] == 64  # the 950's vector cores
    assert {"persistent-grid", "two-level-tiling"} <= proposed


@pytest.mark.parametrize(
    "path, rewrite", [(FLAT_DIVMOD, "structured-2d-index"), (EXAMPLES / "vector_add.py", "persistent-grid")]
)
def test_the_ir_facts_alone_call_for_the_ascend_rewrites(ascend_toolchain, tmp_path, path, rewrite):
    _evidence, proposed = evidence_and_proposals(path, tmp_path, with_findings=False)
    assert rewrite in proposed
