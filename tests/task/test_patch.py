"""A verified candidate goes back as a patch against the user's file; applied only when asked, with a
backup, and never over edits the user made meanwhile."""

import subprocess

import pytest

from diagnose.errors import UsageError
from diagnose.task.harness import replace_user_part
from diagnose.task.patch import apply_command, apply_patch, write_patch

MODULE = "import triton\n\n\ndef host(x):\n    BLOCK = 128\n    return x\n\n\ndef other():\n    return 1\n"
SECTION = "\n\n# ---- diagnose task harness (generated from m.py) ----\nModel = None\n"


def _task(source: str) -> str:
    return source + SECTION


def test_the_patch_applies_with_git_and_the_module_is_untouched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = tmp_path / "m.py"
    module.write_text(MODULE)
    best = replace_user_part(_task(MODULE), MODULE.replace("BLOCK = 128", "BLOCK = 1024"))
    patch = write_patch(module, _task(MODULE), best)
    assert patch.path == tmp_path / "m.diagnose.patch" and (patch.added, patch.removed) == (1, 1)
    assert module.read_text() == MODULE
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run(["git", "apply", str(patch.path)], check=True)
    assert "BLOCK = 1024" in module.read_text() and "diagnose task harness" not in module.read_text()


def test_the_patch_is_relative_to_the_repository_and_applies_from_anywhere(tmp_path, monkeypatch):
    """Written from a run in another folder (the real-corpus run wrote `a/../src/liger/...`, which git
    refuses), the patch names the module from its checkout's top, and the printed command works."""
    repo = tmp_path / "proj"
    (repo / "src" / "ops").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    module = repo / "src" / "ops" / "m.py"
    module.write_text(MODULE)
    elsewhere = tmp_path / "runs"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    patch = write_patch(module, _task(MODULE), _task(MODULE.replace("BLOCK = 128", "BLOCK = 64")))
    assert "--- a/src/ops/m.py" in patch.path.read_text()
    command = apply_command(patch.path, module)
    assert command == f"git -C {repo} apply {patch.path}"
    subprocess.run(command.split(), check=True)
    assert "BLOCK = 64" in module.read_text()


def test_apply_keeps_a_backup(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(MODULE)
    patch = write_patch(module, _task(MODULE), _task(MODULE.replace("BLOCK = 128", "BLOCK = 64")))
    backup = apply_patch(patch)
    assert backup.read_text() == MODULE and "BLOCK = 64" in module.read_text()


def test_edits_made_meanwhile_stay_and_the_candidate_is_replayed_around_them(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("# a comment the user added\n" + MODULE.replace("return 1", "return 2"))
    patch = write_patch(module, _task(MODULE), _task(MODULE.replace("BLOCK = 128", "BLOCK = 64")))
    assert patch.new_source.startswith("# a comment the user added\n")
    assert "return 2" in patch.new_source and "BLOCK = 64" in patch.new_source


def test_an_edit_to_the_very_lines_the_candidate_changes_is_refused(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(MODULE.replace("BLOCK = 128", "BLOCK = 256"))
    with pytest.raises(UsageError, match="changed since the run read it"):
        write_patch(module, _task(MODULE), _task(MODULE.replace("BLOCK = 128", "BLOCK = 64")))


def test_a_module_changed_after_the_patch_is_not_overwritten(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(MODULE)
    patch = write_patch(module, _task(MODULE), _task(MODULE.replace("BLOCK = 128", "BLOCK = 64")))
    module.write_text(MODULE + "# later\n")
    with pytest.raises(UsageError, match="apply .* by hand"):
        apply_patch(patch)
    assert module.read_text().endswith("# later\n")


def test_no_change_no_patch(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(MODULE)
    assert write_patch(module, _task(MODULE), _task(MODULE)) is None
