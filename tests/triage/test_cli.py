"""`triage_command`: exit codes, usage errors, [tool.diagnose] configuration, suppressions."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import GOOD_KERNELS, RULE_FIXTURES
from diagnose.errors import UsageError
from diagnose.triage import triage_source
from diagnose.triage.cli import triage_command
from diagnose.triage.codes import select_codes

SLOW_ADD = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch(x, out, n):
    add_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128){comment}
"""


def write(tmp_path: Path, comment: str = "", pyproject: str | None = None) -> Path:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    sub = tmp_path / "pkg"
    sub.mkdir(exist_ok=True)
    path = sub / "k.py"
    path.write_text(SLOW_ADD.format(comment=comment))
    return path


def codes(out_json: str) -> list[str]:
    import json

    return [f["code"] for f in json.loads(out_json)]


def test_exit_codes_follow_fail_on(tmp_path):
    path = str(write(tmp_path))
    assert triage_command([path], fail_on="warning")[0] == 1
    assert triage_command([path], fail_on="info")[0] == 1
    assert triage_command([path], fail_on="error")[0] == 0
    assert triage_command([path], fail_on="never")[0] == 0
    assert triage_command([str(GOOD_KERNELS / "fused_softmax.py")])[0] == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"select": ["TRI999"]},
        {"ignore": ["NOPE"]},
        {"fmt": "xml"},
        {"fail_on": "sometimes"},
        {"target": "tpu:v5"},
    ],
)
def test_bad_usage_raises_usage_error(tmp_path, kwargs):
    with pytest.raises(UsageError):
        triage_command([str(write(tmp_path))], **kwargs)


def test_missing_path_is_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        triage_command([str(tmp_path / "missing.py")])
    with pytest.raises(UsageError):
        triage_command([])


def test_selection_by_code_prefix_and_name():
    assert select_codes(["TRI001"]) == ["TRI001"]
    assert all(c.startswith("ASC") for c in select_codes(["ASC"])) and len(select_codes(["ASC"])) > 10
    assert select_codes(["multi-pass-row-reload"]) == ["TRI007"]
    assert "TRI001" not in select_codes(None, ["TRI001"])
    assert select_codes(["ALL"], ["TRI", "ASC"]) == []


def test_config_from_nearest_pyproject(tmp_path):
    path = str(write(tmp_path, pyproject='[tool.diagnose]\nignore = ["TRI001"]\n'))
    assert codes(triage_command([path], fmt="json")[1]) == []
    # the command line wins over the configuration
    assert codes(triage_command([path], fmt="json", ignore=[])[1]) == ["TRI001"]
    assert codes(triage_command([path], fmt="json", select=["TRI001"])[1]) == ["TRI001"]


def test_config_target_and_select(tmp_path):
    path = str(write(tmp_path, pyproject='[tool.diagnose]\ntarget = "ascend:910b"\nselect = ["ASC"]\n'))
    assert codes(triage_command([path], fmt="json")[1]) == ["ASC013"]
    assert codes(triage_command([path], fmt="json", target="cuda:sm90", select=["ALL"])[1]) == ["TRI001"]


def test_pyproject_without_table_is_skipped_and_bad_toml_is_usage_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.diagnose]\nignore = ["TRI001"]\n')
    path = write(tmp_path)
    (path.parent / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert codes(triage_command([str(path)], fmt="json")[1]) == []
    (path.parent / "pyproject.toml").write_text("[tool.diagnose\n")
    with pytest.raises(UsageError):
        triage_command([str(path)])


def test_config_root_stops_the_walk(tmp_path):
    path = write(tmp_path, pyproject='[tool.diagnose]\nignore = ["TRI001"]\n')
    assert codes(triage_command([str(path)], fmt="json", config_root=str(path.parent))[1]) == ["TRI001"]


@pytest.mark.parametrize(
    "comment,flagged",
    [
        ("  # diagnose: ignore[TRI001]", False),
        ("  # diagnose: ignore", False),
        ("  # diagnose: ignore[TRI007, TRI001]", False),
        ("  # diagnose: ignore[TRI007]", True),
        ("", True),
    ],
)
def test_inline_suppressions(tmp_path, comment, flagged):
    path = write(tmp_path, comment=comment)
    assert bool(triage_source(path.read_text(), str(path))) is flagged


def test_folders_are_walked(tmp_path):
    write(tmp_path)
    hidden = tmp_path / ".venv"
    hidden.mkdir()
    (hidden / "skip.py").write_text("def f(:\n")
    code, out = triage_command([str(tmp_path)], fmt="json")
    assert code == 1 and codes(out) == ["TRI001"]


def test_fixtures_folder_runs_end_to_end():
    code, out = triage_command([str(RULE_FIXTURES)], fmt="sarif")
    assert code == 1 and '"ruleId": "TRI000"' in out
