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
    assert finding.severity == "info" and "uses Python 3.12 syntax" in finding.message
    [broken] = triage_source("def f(:\n    pass\n", "k.py", "cuda:sm90", select=["TRI000"])
    assert broken.severity == "error"


NEWER_HEADER = (
    "type Shape = tuple[int, ...]\n"
    'LABEL = f"{"rows"}"\n'  # PEP 701: the f-string nests its own quotes
    'NOTE = f"""\n{"two"}\n"""\n'
)


def test_rules_run_on_a_file_written_for_a_newer_python_at_the_same_lines():
    # three lines become five; every finding moves by exactly that, whatever Python runs diagnose
    plain = triage_source(TRI016, "ops/softmax.py", "cuda:sm90", select=["TRI016"])
    newer = triage_source(NEWER_HEADER + TRI016, "ops/softmax.py", "cuda:sm90", select=["TRI016"])
    assert plain and [f.location.line + 5 for f in plain] == [f.location.line for f in newer]


def test_lowered_text_keeps_every_line_where_it_was():
    from diagnose import syntax

    text = syntax.lowered(NEWER_HEADER + "def first[T](xs: list[T]) -> T:\n    return xs[0]\n")
    assert text.splitlines() == [
        "Shape = tuple[int, ...]",
        'LABEL = ""',
        'NOTE = """',
        "",
        '"""',
        "def first(xs: list[T]) -> T:",
        "    return xs[0]",
    ]
    assert syntax.lowered("def f(:\n") is None
