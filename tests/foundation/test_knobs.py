"""`diagnose.knobs`: the settings read from the environment, where the caches live, and the one worker
time limit a command's `--timeout` sets for every worker it starts."""

import os
import time
from pathlib import Path

import pytest

from diagnose import knobs
from diagnose.errors import UsageError
from diagnose.knobs import Knobs
from diagnose.runtime.runner import call
from diagnose.runtime.runner import user_failure

ENTRIES = "tests.foundation.runner_entries"


@pytest.fixture
def no_override(monkeypatch, tmp_path):
    """No DIAGNOSE_* settings, a private user cache, and a fresh current folder."""
    for name in (knobs.CACHE_DIR, knobs.TIMEOUT, knobs.IR_TIMEOUT):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_knobs_are_typed_and_checked():
    assert Knobs.read({}) == Knobs(cache_dir=None, timeout_s=None, ir_timeout_s=600.0)
    read = Knobs.read({knobs.CACHE_DIR: "/c", knobs.TIMEOUT: "2.5", knobs.IR_TIMEOUT: "30"})
    assert read == Knobs(cache_dir=Path("/c"), timeout_s=2.5, ir_timeout_s=30.0)
    for bad in ("soon", "0", "-1"):
        with pytest.raises(UsageError, match=knobs.TIMEOUT):
            Knobs.read({knobs.TIMEOUT: bad})
    assert Knobs.read({knobs.INTERPRET_MAX_ELEMENTS: "4096"}).interpret_max_elements == 4096
    for bad in ("lots", "0", "2.5"):
        with pytest.raises(UsageError, match=knobs.INTERPRET_MAX_ELEMENTS):
            Knobs.read({knobs.INTERPRET_MAX_ELEMENTS: bad})


def test_runs_go_to_the_user_cache_and_compiles_stay_in_the_project(no_override):
    from diagnose.agent.run import runs_root
    from diagnose.cache import cache_root

    assert runs_root() == no_override / "xdg" / "diagnose" / "runs"
    assert cache_root() == no_override / ".diagnose_cache"
    assert knobs.run_roots() == (no_override / "xdg" / "diagnose" / "runs", no_override / ".diagnose_cache" / "runs")


def test_the_override_moves_both(no_override, monkeypatch):
    from diagnose.agent.run import runs_root
    from diagnose.cache import cache_root

    monkeypatch.setenv(knobs.CACHE_DIR, str(no_override / "elsewhere"))
    assert runs_root() == no_override / "elsewhere" / "runs"
    assert cache_root() == no_override / "elsewhere"


def test_a_run_is_found_in_the_user_cache_then_in_an_older_versions_folder(no_override):
    from diagnose.agent.run import find_run

    new = knobs.runs_root() / "20250101-000000-aaaaaa"
    old = no_override / ".diagnose_cache" / "runs" / "20240101-000000-bbbbbb"
    for folder in (new, old):
        folder.mkdir(parents=True)
    assert find_run(new.name) == new and find_run(old.name) == old
    assert find_run("20990101-000000-cccccc") is None
    assert find_run("../runs") is None, "an id, never a path"


def test_scope_sets_then_restores(monkeypatch):
    monkeypatch.setenv(knobs.TIMEOUT, "7")
    monkeypatch.delenv(knobs.CACHE_DIR, raising=False)
    with knobs.scope(timeout_s=3.0, cache_dir=Path("relative"), ir_timeout_s=None):
        assert Knobs.read().timeout_s == 3.0
        assert Knobs.read().cache_dir == Path.cwd() / "relative", "made absolute, for workers elsewhere"
    assert os.environ[knobs.TIMEOUT] == "7" and knobs.CACHE_DIR not in os.environ
    with pytest.raises(TypeError):
        with knobs.scope(timeout=1):
            pass


def test_the_timeout_knob_bounds_every_user_code_worker(monkeypatch):
    monkeypatch.setenv(knobs.TIMEOUT, "1")
    start = time.monotonic()
    result = call(f"{ENTRIES}:hang", {}, timeout_s=600)  # a layer's own, longer limit
    assert time.monotonic() - start < 8
    assert result.failure.kind == "timeout" and result.failure.message == "worker did not finish within 1 s (--timeout)"
    assert user_failure(result.failure, "/any/task.py") == result.failure.message


@pytest.mark.slow
def test_jobs_of_ours_keep_their_own_limit(monkeypatch):
    monkeypatch.setenv(knobs.TIMEOUT, "0.5")
    result = call(f"{ENTRIES}:nap", {"seconds": 1.5}, timeout_s=60, user_code=False)
    assert result.ok, "a probe slower than the user's --timeout still runs to the end"


def test_user_failure_tells_the_users_code_from_ours():
    from diagnose.records import Failure

    raised = Failure("exception", "RuntimeError: boom", 'File "/w/task.py", line 3, in get_inputs\n')
    assert user_failure(raised, "/w/task.py") == "RuntimeError: boom"
    assert (
        user_failure(Failure("exception", "KeyError: x", 'File "/site/diagnose/ir/compile.py"'), "/w/task.py") is None
    )


def test_ctrl_c_in_the_parent_kills_the_worker(monkeypatch):
    """A KeyboardInterrupt while waiting on a worker (in its own process group, out of the terminal's
    reach) must not leave it running."""
    from diagnose.runtime import runner

    started = []

    def interrupted_watch(proc, timeout_s, memory_limit):
        started.append(proc)
        time.sleep(0.5)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "watch", interrupted_watch)
    with pytest.raises(KeyboardInterrupt):
        call(f"{ENTRIES}:hang", {}, timeout_s=60)
    (proc,) = started
    assert proc.poll() is not None, "the worker was killed"
