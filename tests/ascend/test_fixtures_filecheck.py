"""Golden tests: every Ascend fixture's facts, FileCheck'd against the CHECK lines it carries.

Each fixture compiles for `ascend:910b` and `ascend:950` (unless it says `# targets: ...`);
`CHECK:` lines apply to both, `A910B:` / `A950:` to one. Inline checks use `[[@LINE]]`, so the
expectation sits on the line that provokes the fact. The dump is `str(evidence)` per line
(`conftest.facts_dump`); the whole corpus compiles once per target, in one worker.
"""

from __future__ import annotations

import re

import pytest

from tests.ir.filecheck import filecheck

from .conftest import PREFIX, TARGETS, facts_dump, fixture_files, fixture_targets


def _cases():
    for path in fixture_files():
        text = path.read_text()
        for target in fixture_targets(path):
            if re.search(rf"\b(CHECK|{PREFIX[target]})(-NOT|-SAME|-NEXT|-DAG|-LABEL)?:", text):
                yield pytest.param(path, target, id=f"{path.stem}-{PREFIX[target].lower()}")


def test_corpus_is_big_enough():
    files = fixture_files()
    assert len(files) >= 10
    assert all(re.search(r"\bCHECK|A910B|A950", p.read_text()) for p in files), "every fixture carries checks"
    assert {t for p in files for t in fixture_targets(p)} == set(TARGETS)


@pytest.mark.parametrize("path,target", list(_cases()))
def test_fixture_facts(path, target, ascend_toolchain):
    dump = facts_dump(path.stem, target, ascend_toolchain.python)
    ok, log = filecheck(str(path), dump, ("CHECK", PREFIX[target]))
    assert ok, f"{log}\n--- facts:\n{dump}"
