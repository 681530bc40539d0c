"""Facts a fixture file cannot carry: where a file lives (a vendor port's folder) and which Python
grammar it is written in."""

from __future__ import annotations

import sys

import pytest

from diagnose.triage import triage_source
from tests.triage.helpers import RULE_FIXTURES

TRI016 = (RULE_FIXTURES / "TRI016.py").read_text()


def codes(source: str, path: str, target: str = "cuda:sm90", select=("TRI016",)) -> list[str]:
    return [f.code for f in triage_source(source, path, target, select=list(select))]


def test_a_power_of_two_block_is_asked_for_on_gpus_not_in_a_vendor_port():
    assert codes(TRI016, "ops/softmax.py")  # flagged where a GPU compiles it
    for path in ("ops/backends/_ascend/softmax.py", "runtime/backend/_cambricon/ops/softmax.py", "npu/softmax.py"):
        assert codes(TRI016, path) == [], path  # the port's compiler takes any size
    assert codes("import torch_npu\n" + TRI016, "ops/softmax.py") == []
    assert codes(TRI016, "ops/softmax.py", "ascend:910b") == []  # triton-ascend: no power of two needed


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the running Python reads 3.12 syntax itself")
def test_newer_python_syntax_is_info_and_a_real_syntax_error_stays_an_error():
    newer = "type Rows = list[int]\n\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\n"
    [finding] = triage_source(newer, "k.py", "cuda:sm90", select=["TRI000"])
    assert finding.severity == "info" and "needs Python 3.12" in finding.message
    [broken] = triage_source("def f(:\n    pass\n", "k.py", "cuda:sm90", select=["TRI000"])
    assert broken.severity == "error"
