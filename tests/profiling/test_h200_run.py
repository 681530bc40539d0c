"""Classification decisions on the H200 run's real data: the measurements saved by
`benchmarks/h200/profiling.sh` (benchmarks/results/2026-12-02-h200-profiling/profile/) and its Nsight
Compute pages (tests/fixtures/profiling/ncu/h200_*), re-analysed without a device."""

from __future__ import annotations

import pytest

from diagnose.profiling.nvidia.ncu_run import NcuRun
from diagnose.profiling.profile import reanalyze
from tests.conftest import EXAMPLES, ROOT
from tests.profiling.conftest import NCU

RESULTS = ROOT / "benchmarks" / "results" / "2026-12-02-h200-profiling" / "profile"
KERNELS = {
    "softmax": "softmax_kernel",
    "layernorm": "layernorm_kernel",
    "vector_add": "add_kernel",
    "matmul": "matmul_kernel",
}


def analysed(example: str):
    kernel = KERNELS[example]
    pages = NcuRun(
        str(NCU),
        (NCU / f"h200_{example}_raw.csv").read_text(),
        None,
        ((kernel, (NCU / f"h200_{example}_source_sass.csv").read_text()),),
    )
    return reanalyze(RESULTS / example, EXAMPLES / f"{example}.py", pages)


@pytest.mark.slow
@pytest.mark.parametrize(
    "example, primary, also, fraction",
    [
        ("softmax", "PRF001", {"PRF103"}, 0.60),  # re-reads served by L2 (78% busy), DRAM 1.2x minimal
        ("layernorm", "PRF001", {"PRF104", "PRF103"}, 0.455),  # three passes: DRAM moves 1.96x the minimal bytes
        ("vector_add", "PRF005", {"PRF103"}, 0.587),  # 524k programs of 128 elements: SMs half occupied
        ("matmul", "PRF001", {"PRF002", "PRF104", "PRF103"}, 0.187),  # 32x32 tiles: L2-bound, mma_v2 not wgmma
    ],
)
def test_classification_of_the_examples(example, primary, also, fraction):
    result = analysed(example)
    (group,) = result.groups
    findings = result.group_findings(group)
    assert findings[0].code == primary and findings[0].confidence == "high"
    assert also <= {f.code for f in findings[1:]}
    candidate = next(p for p in result.positions if p.variant == "candidate")
    assert candidate.fraction == pytest.approx(fraction, abs=0.005)
    assert result.ceilings.measured and result.ceilings.device == "NVIDIA H200"
    assert any(e.source == "ncu" for e in findings[0].evidence)
