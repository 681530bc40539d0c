"""`diagnose decompose` on a CUDA device: each subgraph's candidates timed, Inductor's kernels chosen
only where faster, the fusion search tried on timed neighbours, the composite verified and timed end to
end against eager and `torch.compile`."""

from __future__ import annotations

import pytest

from diagnose.decompose.command import decompose
from diagnose.verify.harness import CheckOptions
from tests.decompose.conftest import MODELS

pytestmark = pytest.mark.gpu

OPTIONS = CheckOptions(device="cuda", seeds=(0, 1), baselines=("eager", "compile"), unseen_shapes=False)


def test_the_l2_chain_is_timed_searched_and_composed_on_the_device(tmp_path):
    report = decompose(MODELS / "l2_chain.py", None, OPTIONS, tmp_path / "out", fuse_budget=1)
    assert all(c.time_ms is not None for sg in report.subgraphs for c in sg.candidates if c.status == "passed")
    torch_times = [next(c.time_ms for c in sg.candidates if c.name == "torch") for sg in report.subgraphs]
    assert all(t is not None and t > 0 for t in torch_times)
    # the two subgraphs are neighbours, the second reading the first's output alone: one pair tried, its
    # times measured (the lone conv, which no candidate times alone, inside the fused task's torch time)
    assert [f.name for f in report.fusions] == ["fused_sg0_sg1"]
    assert report.fusions[0].before_ms > 0 and report.fusions[0].after_ms > 0
    assert "Time of the chosen implementations" in (tmp_path / "out" / "report.md").read_text()
    if report.end_to_end.passed is not None:
        assert report.end_to_end.passed is True
        assert dict(report.end_to_end.speedups).keys() == {"eager", "compile"}
