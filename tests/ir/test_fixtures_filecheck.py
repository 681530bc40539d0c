"""Golden tests: every fixture's facts, FileCheck'd against the CHECK lines the fixture carries.

A fixture runs on every target in `TARGETS`; `CHECK:` lines apply to all of them, `SM90:` /
`GFX942:` lines to one. Inline checks use `[[@LINE]]`, so the expectation sits on the line that
provokes the fact. The dump FileCheck reads is `str(evidence)` per line (see conftest.facts_dump).
"""

from __future__ import annotations

import re

import pytest

from .conftest import FIXTURES, TARGETS, facts_dump
from .filecheck import filecheck

PREFIX = {"cuda:sm90": "SM90", "hip:gfx942": "GFX942"}
FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*.py") if not p.name.startswith("_"))


def _cases():
    for path in FIXTURE_FILES:
        text = path.read_text()
        for target in TARGETS:
            if re.search(rf"\b(CHECK|{PREFIX[target]})(-NOT|-SAME|-NEXT|-DAG)?:", text):
                yield pytest.param(path.stem, target, id=f"{path.stem}-{PREFIX[target].lower()}")


def test_corpus_is_big_enough():
    assert len(FIXTURE_FILES) >= 15


@pytest.mark.parametrize("fixture,target", list(_cases()))
def test_fixture_facts(fixture, target):
    dump = facts_dump(fixture, target)
    ok, log = filecheck(str(FIXTURES / f"{fixture}.py"), dump, ("CHECK", PREFIX[target]))
    assert ok, f"{log}\n--- facts:\n{dump}"
