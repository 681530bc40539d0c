"""Every rule against its fixture: exactly the lines marked `# error: [CODE]` are flagged.

Plus the table's integrity: every code has a rule module named for it, a docstring with all the
sections, a fixture, and a stable, family-prefixed code.
"""

from __future__ import annotations

import importlib
import re

import pytest

from .helpers import RULE_FIXTURES, TARGET, expected_lines
from diagnose.triage.rewrite_ids import REWRITE_IDS
from diagnose.triage import triage_source
from diagnose.triage.codes import RULES
from diagnose.triage.rule import SECTIONS
from diagnose.targets import DEFAULT_ARCH


def fixture_target(rule, source: str) -> str:
    m = TARGET.search(source)
    if m:
        return m.group(1)
    family = "cuda" if "cuda" in rule.targets else rule.targets[0]
    arch = rule.archs[0] if rule.archs else DEFAULT_ARCH[family]
    return f"{family}:{arch}"


@pytest.mark.parametrize("code", list(RULES))
def test_rule_flags_exactly_the_marked_lines(code):
    rule = RULES[code]
    path = RULE_FIXTURES / f"{code}.py"
    source = path.read_text()
    findings = triage_source(source, str(path), fixture_target(rule, source), select=[code])
    expected = expected_lines(source, code)
    assert expected, f"{path.name} marks no line with `# error: [{code}]`"
    got = {f.location.line for f in findings}
    assert got == expected, f"missing {sorted(expected - got)}, unexpected {sorted(got - expected)}: " + "; ".join(
        f"{f.location.line}: {f.message}" for f in findings
    )
    for f in findings:
        assert f.code == code and f.severity == rule.severity
        assert f.evidence[0].stage == "triage" and f.evidence[0].source == "ast"
        assert f.rewrites == REWRITE_IDS.get(code, ())


@pytest.mark.parametrize("code", list(RULES))
def test_rule_is_documented_and_has_a_fixture(code):
    rule = RULES[code]
    module = importlib.import_module(rule.__module__)
    assert module.__name__ == "diagnose.triage.rules." + rule.name.replace("-", "_")
    assert re.fullmatch(r"(TRI|ASC)\d{3}", code) and rule.code == code
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    sections = rule.sections()
    assert list(sections) == list(SECTIONS), f"{code} docstring sections: {list(sections)}"
    assert all(sections[s] for s in SECTIONS)
    assert all(family in sections["Targets"] for family in rule.targets)
    assert set(rule.targets) <= {"cuda", "hip", "ascend"}
    assert code.startswith("TRI") or rule.targets == ("ascend",), "ASC codes are Ascend-only"
    assert rule.severity in ("error", "warning", "info") and rule.confidence in ("high", "medium", "low")
    assert rule.message and rule.fix_title
    assert (RULE_FIXTURES / f"{code}.py").is_file()


def test_rule_names_are_unique_and_numerous():
    names = [r.name for r in RULES.values()]
    assert len(names) == len(set(names))
    assert len(RULES) >= 30
    families = {f for r in RULES.values() for f in r.targets}
    assert {"cuda", "ascend"} <= families


def test_readme_rule_table_is_current():
    from pathlib import Path

    from diagnose.triage.docs import rule_table

    readme = Path(__file__).resolve().parents[2] / "diagnose" / "triage" / "README.md"
    assert rule_table() in readme.read_text(), "run `python -m diagnose.triage.docs` and update README.md"
