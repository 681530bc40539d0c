"""The examples in examples/ (first conversions, correct but slow) produce the findings a kernel
engineer would expect, and nothing else at warning level."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.triage import triage_source
from diagnose.triage.engine import at_or_above

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EXPECTED = {
    # file: {target: expected codes at warning or above}
    "vector_add.py": {"cuda:sm90": {"TRI001"}, "ascend:910b": {"ASC001"}},
    "softmax.py": {"cuda:sm90": {"TRI007"}, "ascend:910b": {"TRI007", "ASC002"}},
    "layernorm.py": {"cuda:sm90": {"TRI007"}, "ascend:910b": {"TRI007", "ASC002"}},
    "matmul.py": {"cuda:sm90": {"TRI005", "TRI019"}, "ascend:910b": {"TRI019", "ASC001", "ASC002"}},
}
CASES = [(name, target) for name, targets in EXPECTED.items() for target in targets]


@pytest.mark.parametrize("name,target", CASES)
def test_example_findings(name, target):
    path = EXAMPLES / name
    if not path.exists():
        pytest.skip(f"{name} is not in examples/ yet")
    findings = at_or_above(triage_source(path.read_text(), str(path), target), "warning")
    assert {f.code for f in findings} == EXPECTED[name][target], [
        f"{f.location.line}: {f.code} {f.message}" for f in findings
    ]


def test_softmax_and_layernorm_flag_the_second_and_third_pass():
    for name in ("softmax.py", "layernorm.py"):
        path = EXAMPLES / name
        if not path.exists():
            pytest.skip(f"{name} is not in examples/ yet")
        reloads = [f for f in triage_source(path.read_text(), str(path)) if f.code == "TRI007"]
        assert [f.evidence[0].arg("n") for f in reloads] == [2, 3]
        assert all(f.secondary for f in reloads)
