"""Text, JSON and SARIF renderings; the SARIF validated against the official 2.1.0 schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from .helpers import RULE_FIXTURES, expected_lines
from diagnose.triage import triage_source
from diagnose.triage.cli import triage_command
from diagnose.triage.codes import RULES
from diagnose.triage.sarif import render_sarif
from diagnose.triage.text import render_text

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())
ROOT = Path(__file__).resolve().parents[2]


def sarif_for(paths, root=ROOT):
    findings, sources = [], {}
    for path in paths:
        sources[str(path)] = path.read_text()
        findings += triage_source(sources[str(path)], str(path), "cuda:sm90")
        findings += triage_source(sources[str(path)], str(path), "ascend:910b", select=["ASC"])
    return findings, render_sarif(findings, sources, str(root))


def test_sarif_is_valid_against_the_official_schema():
    findings, log = sarif_for(sorted(RULE_FIXTURES.glob("*.py")))
    assert findings
    validator = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_sarif_fields_github_needs():
    findings, log = sarif_for([RULE_FIXTURES / "TRI007.py"])
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert ids == list(RULES)
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
    assert "%SRCROOT%" in run["originalUriBaseIds"]
    result = run["results"][0]
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "tests/fixtures/triage/TRI007.py", "uriBaseId": "%SRCROOT%"}
    f = findings[0]
    assert loc["region"]["startLine"] == f.location.line
    assert loc["region"]["startColumn"] == f.location.col + 1  # SARIF columns are 1-based
    assert loc["region"]["endColumn"] == f.location.end_col + 1
    assert result["ruleId"] == f.code and ids[result["ruleIndex"]] == f.code
    assert result["level"] == "warning"
    hashes = [r["partialFingerprints"]["primaryLocationLineHash"] for r in run["results"]]
    assert len(set(hashes)) == len(hashes)
    assert result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] < f.location.line


def test_fingerprint_survives_lines_moving(tmp_path):
    src = (RULE_FIXTURES / "TRI004.py").read_text()
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(src)
    b.write_text("\n\n# moved down\n" + src)
    prints = []
    for path in (a, b):
        findings = triage_source(path.read_text(), str(path))
        log = render_sarif(findings, {str(path): path.read_text()}, str(tmp_path))
        prints.append([r["partialFingerprints"]["primaryLocationLineHash"] for r in log["runs"][0]["results"]])
    assert prints[0] == prints[1]


def test_text_view_has_source_line_and_caret():
    path = RULE_FIXTURES / "TRI004.py"
    source = path.read_text()
    findings = triage_source(source, str(path))
    text = render_text(findings, {str(path): source})
    f = findings[0]
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(f"{path}:{f.location.line}:"))
    assert f"{f.location.line}:{f.location.col + 1}: TRI004 [warning]" in lines[head]
    code_line, caret_line = lines[head + 2], lines[head + 3]
    offset = code_line.index("| ") + 2
    assert caret_line.index("^") - offset == f.location.col
    assert caret_line.count("^") == f.location.end_col - f.location.col
    assert "= help:" in text and text.rstrip().endswith("(2 warnings).")


def test_text_view_when_clean():
    _, out = triage_command([str(ROOT / "tests/fixtures/good_kernels/vector_add.py")])
    assert out.strip() == "All checks passed."


def test_json_is_a_list_of_finding_dicts():
    code, out = triage_command([str(RULE_FIXTURES / "TRI001.py")], fmt="json", select=["TRI001"])
    data = json.loads(out)
    assert code == 1 and len(data) == len(expected_lines((RULE_FIXTURES / "TRI001.py").read_text(), "TRI001"))
    first = data[0]
    assert first["code"] == "TRI001" and first["severity"] == "warning"
    assert first["location"]["line"] > 0 and first["evidence"][0]["stage"] == "triage"
    assert first["evidence"][0]["source"] == "ast" and first["rewrites"] == [
        "retune-launch",
        "add-autotune",
        "extend-autotune",
    ]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_every_format_renders_a_syntax_error(fmt, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    code, out = triage_command([str(bad)], fmt=fmt, config_root=str(tmp_path))
    assert code == 1 and "TRI000" in out
