"""No rule fires at warning or above on kernels written the way good Triton code is written.

A noisy rule is a broken rule: each good kernel is triaged for every family it declares
(`# good-for: ...`, default cuda and hip), and the few info-level findings allowed are counted.
"""

from __future__ import annotations

import re

import pytest

from .helpers import GOOD_KERNELS
from diagnose.triage import triage_source
from diagnose.triage.engine import at_or_above

FILES = sorted(GOOD_KERNELS.glob("*.py"))
GOOD_FOR = re.compile(r"^# good-for:(.*)$", re.M)
CASES = [
    (path, family) for path in FILES for family in (GOOD_FOR.search(path.read_text()) or ["", "cuda hip"])[1].split()
]
MAX_INFO = 2  # across the whole corpus


def test_corpus_is_large_and_covers_both_vendors():
    assert len(FILES) >= 20
    assert {family for _, family in CASES} == {"cuda", "hip", "ascend"}


@pytest.mark.parametrize("path,family", CASES, ids=[f"{p.stem}-{f}" for p, f in CASES])
def test_good_kernel_has_no_warning(path, family):
    findings = triage_source(path.read_text(), str(path), family)
    loud = at_or_above(findings, "warning")
    assert not loud, "\n".join(f"{f.location}: {f.code} {f.message}" for f in loud)


def test_info_findings_stay_near_zero():
    infos = [f for path, family in CASES for f in triage_source(path.read_text(), str(path), family)]
    assert len(infos) <= MAX_INFO, [f"{f.location}: {f.code}" for f in infos]
