"""Any Python file gives a clean result or one clear diagnostic, never an exception: syntax errors,
no kernels, huge files, hostile constants, non-UTF-8 bytes, and fixtures mutated at random."""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import GOOD_KERNELS, RULE_FIXTURES
from diagnose.records import Finding
from diagnose.triage import triage_source
from diagnose.triage.cli import read_source

SOURCES = [p.read_text() for p in sorted(RULE_FIXTURES.glob("*.py")) + sorted(GOOD_KERNELS.glob("*.py"))]
TARGETS = ["cuda:sm90", "cuda:sm80", "hip:gfx942", "ascend:910b", "ascend:950"]


def parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def check(source: str, target: str = "cuda:sm90") -> list[Finding]:
    findings = triage_source(source, "mutated.py", target)
    assert all(isinstance(f, Finding) for f in findings)
    if not parses(source):
        assert [f.code for f in findings] == ["TRI000"]
    n_lines = len(re.split(r"\r\n|\r|\n", source))
    assert all(1 <= f.location.line <= n_lines for f in findings)
    return findings


@pytest.mark.parametrize(
    "source",
    [
        "",
        "\n",
        "x = 1\n",
        "def f(:\n",
        "import triton\n@triton.jit\n",
        "\x00",
        "class ModelNew:\n    def forward(self): pass\n",
        "@triton.jit\ndef k():\n    return\n",
        "\ufeffx = 1\n",
    ],
)
def test_small_and_odd_sources(source):
    check(source)


def test_syntax_error_is_one_finding_at_its_line():
    findings = triage_source("import triton\n\ndef f(x:\n    pass\n", "bad.py")
    assert [(f.code, f.location.line) for f in findings] == [("TRI000", 3)]
    assert findings[0].severity == "error"


def test_deep_nesting_and_hostile_constants():
    check("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    check("x = " + " + ".join(["1"] * 20000) + "\n")
    # the module's constants exhaust the evaluator's budget before the kernel's defaults are read
    check(
        "x = "
        + " + ".join(["1"] * 3000)
        + "\n" * 2
        + "\n".join(f"y{i} = x + {i}" for i in range(30000))
        + "\n@triton.jit\ndef k(p, B: tl.constexpr = 64):\n    tl.store(p + tl.arange(0, B), 1)\n"
        + "def go(p):\n    k[(lambda m: (x,))](p)\n"
    )
    check(
        "N = 10 ** 10 ** 10\nS = 'a' * 10 ** 9\nL = [1] * 10 ** 9\nM = 1 << 10 ** 9\n"
        "@triton.jit\ndef k(x, B: tl.constexpr):\n    tl.store(x + tl.arange(0, B), 1)\n"
        "def go(x):\n    k[(N,)](x, B=N)\n    k[(M,)](x, B=S)\n"
    )


def test_huge_file_is_still_fast_enough():
    source = "\n".join(SOURCES) * 4  # thousands of lines, duplicate names
    check(source)


def test_non_utf8_bytes_are_replaced(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes(b"# caf\xe9\nimport triton\nx = '\xff'\n")
    source = read_source(str(path))
    assert "\ufffd" in source
    assert check(source) == []
    path.write_bytes(b"x = 1\n\xff\xfe = 2\n")
    assert [f.code for f in check(read_source(str(path)))] == ["TRI000"]


def mutate(draw, source: str) -> str:
    lines = source.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "insert"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        else:
            text = draw(st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=5))
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + text + lines[i][at:]
    return "\n".join(lines)


@st.composite
def mutated_fixture(draw):
    return mutate(draw, draw(st.sampled_from(SOURCES)))


@pytest.mark.slow
@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_fixture(), st.sampled_from(TARGETS))
def test_mutated_fixtures_never_raise(source, target):
    check(source, target)


@settings(max_examples=100, deadline=None, database=None)
@given(st.text(max_size=300), st.sampled_from(TARGETS))
def test_arbitrary_text_never_raises(source, target):
    check(source, target)
