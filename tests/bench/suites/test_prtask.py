"""PR-task adapter: a candidate patch applied in a scratch worktree, the host project's tests run there."""

import json
import shutil
import subprocess

import pytest

from diagnose.bench.suites import prtask
from diagnose.bench.sweep import SweepOptions
from tests.bench.suites.conftest import SUITES, failure, run_sweep


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """The fixture folder copied, its host project made a git checkout with one commit."""
    root = tmp_path_factory.mktemp("pr") / "prtask"
    shutil.copytree(SUITES / "prtask", root)
    host = root / "host"
    git("init", "-q", cwd=host)
    git("add", "-A", cwd=host)
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "base", cwd=host)
    return root


@pytest.fixture(scope="module")
def swept(checkout, tmp_path_factory):
    head = git("rev-parse", "HEAD", cwd=checkout / "host")
    result = run_sweep(
        "prtask", checkout / "suite", tmp_path_factory.mktemp("db") / "r.sqlite", solutions=checkout / "solutions"
    )
    host = checkout / "host"
    assert git("status", "--porcelain", cwd=host) == "", "the user's checkout is never touched"
    assert git("rev-parse", "HEAD", cwd=host) == head
    assert len(git("worktree", "list", cwd=host).splitlines()) == 1, "scratch worktrees are removed"
    return result


def test_patches_are_judged_by_the_host_tests(swept):
    summary, rows = swept
    outcome = {
        entry: [(r.status, r.data.get("reasons") or r.data.get("failure")) for r in group]
        for entry, group in rows.items()
    }
    assert (summary.ran, summary.failed) == (6, 4), outcome
    [scale] = rows["add_scale"]
    assert scale.status == "passed" and (scale.data["ftp_passed"], scale.data["ptp_passed"]) == (1, 1)
    assert scale.data["changed_files"] == ["hostlib/ops.py"]
    assert scale.data["timed"] and scale.data["speedup_vs_original"] > 0
    assert [r.status for r in rows["fix_clamp"]] == ["passed"]


def test_a_failing_host_test_fails_the_task(swept):
    [relu] = swept[1]["add_relu"]
    assert relu.status == "failed" and relu.data["ftp_passed"] == 1 and relu.data["ptp_passed"] == 0
    assert relu.data["reasons"][0].startswith("pass-to-pass `python -m unittest -q checks.check_add` exited 1")


def test_broken_tasks_give_one_line_errors(swept):
    rows = swept[1]
    assert failure(rows["already_passing"]) == (
        "not fail-to-pass: `python -m unittest -q checks.check_add` passes before the patch"
    )
    assert failure(rows["stale_patch"]).startswith("stale_patch.patch does not apply")
    assert failure(rows["malformed"]).startswith("malformed.json:2: malformed JSON")


def test_a_command_over_its_timeout_is_killed(checkout, tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "slow.json").write_text(
        json.dumps(
            {
                "repo": str(checkout / "host"),
                "kernel_file": "hostlib/ops.py",
                "requirement": "r",
                "fail_to_pass": ["python -m unittest -q checks.check_scale"],
                "pass_to_pass": ["python -c 'import time; time.sleep(30)'"],
                "timeout_s": 1,
            }
        )
    )
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(checkout / "solutions" / "add_scale.patch", solutions / "slow.patch")
    _, rows = run_sweep("prtask", suite, tmp_path / "r.sqlite", solutions=solutions)
    [row] = rows["slow"]
    assert row.status == "failed" and row.data["reasons"] == [
        "pass-to-pass `python -c 'import time; time.sleep(30)'` timed out"
    ]
    assert row.data["pass_to_pass"][0]["wall_s"] < 10


def test_a_folder_that_is_not_a_checkout_is_reported(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "t.json").write_text(
        json.dumps({"repo": "repo", "kernel_file": "k.py", "requirement": "r", "fail_to_pass": ["true"]})
    )
    [task] = prtask.load(tmp_path, SweepOptions(solutions=tmp_path))
    assert task.problem == "t.json: repo is not a git checkout"
