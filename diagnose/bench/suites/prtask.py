"""PR-derived end-to-end tasks in the style of RealisticTritonBench: change a kernel inside a real
project, judged by that project's own tests. RealisticTritonBench has a public release
(github.com/ZJU-CTAG/RealisticTritonBench: vLLM pull requests in `data/problems.json`, judged in
SWE-bench-style Docker images); this format is diagnose's own and does not read that release.

Layout::

    SUITE/fused_scale.json        one task
    SOLUTIONS/fused_scale.patch   the candidate: a unified diff against the task's checkout (`git apply`)

A task is one JSON object::

    {"task_id": "fused_scale", "repo": "../hostproject", "base": "HEAD",
     "kernel_file": "hostlib/ops.py",
     "requirement": "Add a `scale` argument to `add` ...",
     "fail_to_pass": ["python -m pytest -q tests/test_scale.py"],
     "pass_to_pass": ["python -m pytest -q tests/test_add.py"],
     "e2e": "python bench.py", "timeout_s": 300}

- `repo`: a local git checkout (relative paths are from the task file); `base`: the commit to start
  from (default `HEAD`); `kernel_file`: the file the requirement is about (the patch must change it);
- `fail_to_pass`: commands that fail before the patch and must pass after it;
  `pass_to_pass`: commands that must still pass after it; `e2e` (optional): a command timed before and
  after the patch (wall time; the speedup is before / after); `timeout_s`: per command (default 300).

Scoring never touches the user's checkout: it adds a detached `git worktree` of `base` in a scratch
folder, runs the fail-to-pass commands there (each must fail: otherwise the task is not fail-to-pass)
and the `e2e` command, applies the candidate patch with `git apply`, runs every command again, and
removes the worktree. Commands run in their own process group with a timeout (the group is killed when
it runs over); on the `cpu` device they get `TRITON_INTERPRET=1`, as the harness's workers do. A
failing command is reported with its exit code and the last line it printed; a patch that does not
apply, a missing checkout or a malformed task is that task's one-line error, and the sweep goes on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from diagnose.bench.suites.base import (
    Row,
    SuiteTask,
    failed,
    keep,
    make_entry,
    match_solution,
    read_json_object,
    with_tokens,
)
from diagnose.errors import UsageError

MODES = ("score",)
DEFAULT_TIMEOUT_S = 300.0
TAIL = 300


def read_task(path: Path) -> dict:
    """A checked task; ValueError with a one-line reason otherwise."""
    task = read_json_object(path, "task", ("repo", "kernel_file", "requirement", "fail_to_pass"))
    for key in ("fail_to_pass", "pass_to_pass"):
        value = task.get(key, [])
        if not isinstance(value, list) or not all(isinstance(c, str) and c.strip() for c in value):
            raise ValueError(f"{path.name}: `{key}` must be a list of shell commands")
    repo = (path.parent / task["repo"]).resolve()
    if not (repo / ".git").exists():
        raise ValueError(f"{path.name}: {task['repo']} is not a git checkout")
    if not (repo / task["kernel_file"]).is_file():
        raise ValueError(f"{path.name}: the checkout has no kernel file {task['kernel_file']}")
    return {
        **task,
        "repo": repo,
        "base": task.get("base", "HEAD"),
        "pass_to_pass": task.get("pass_to_pass", []),
        "timeout_s": float(task.get("timeout_s", DEFAULT_TIMEOUT_S)),
    }


def load(root: Path, options) -> list[SuiteTask]:
    if options.solutions is None:
        raise UsageError("prtask needs --solutions DIR: a folder of <task>.patch files")
    solutions = Path(options.solutions)
    tasks = []
    for path in sorted(root.rglob("*.json")):
        solution, problem, files = None, None, [path]
        try:
            task = read_task(path)
            solution = match_solution(root, path, solutions, suffix=".patch")
            if solution is None:
                problem = f"{path.name}: no {path.stem}.patch in {solutions}"
            else:
                files.append(solution)
            head = git(["rev-parse", task["base"]], task["repo"], 30)
            extra = head.stdout.strip() if head.returncode == 0 else ""
        except (ValueError, UnicodeDecodeError) as exc:
            problem, extra = str(exc), ""
        tasks.append(SuiteTask(make_entry(root, path, files, extra=extra), tuple(files), solution, problem))
    return keep(tasks, options.pattern)


def git(args: list[str], cwd: Path, timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def run_command(command: str, cwd: Path, timeout_s: float, env: dict) -> dict:
    """Run a host command in its own process group; kill the group when it passes `timeout_s`."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code, timed_out = proc.wait(), True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is gone already: nothing it started outlives it
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.strip()]
    return {
        "command": command,
        "returncode": code,
        "timed_out": timed_out,
        "wall_s": round(time.monotonic() - start, 3),
        "last_line": (lines[-1] if lines else "")[-TAIL:],
    }


def describe(result: dict) -> str:
    if result["timed_out"]:
        return f"`{result['command']}` timed out"
    return f"`{result['command']}` exited {result['returncode']}: {result['last_line']}"


def host_env(device: str) -> dict:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    return env


def score(task: SuiteTask, options) -> list[Row]:
    if task.problem:
        return failed("load_error", task.problem)
    try:
        spec = read_task(task.entry.path)
    except ValueError as exc:
        return failed("load_error", str(exc))
    with tempfile.TemporaryDirectory(prefix="diagnose-prtask-") as scratch:
        tree = Path(scratch, Path(scratch).name)  # a unique name: git names the worktree after it
        added = git(["worktree", "add", "--detach", str(tree), spec["base"]], spec["repo"], 120)
        if added.returncode != 0:
            return failed("load_error", f"git worktree add failed: {added.stderr.strip()}")
        try:
            return with_tokens(in_worktree(spec, tree, task.solution, options), task.solution)
        finally:
            git(["worktree", "remove", "--force", str(tree)], spec["repo"], 120)
            git(["worktree", "prune"], spec["repo"], 60)


def in_worktree(spec: dict, tree: Path, patch: Path, options) -> list[Row]:
    env, timeout = host_env(options.device), min(spec["timeout_s"], options.timeout_s)
    before = [run_command(c, tree, timeout, env) for c in spec["fail_to_pass"]]
    already = [r["command"] for r in before if r["returncode"] == 0]
    if already:
        return failed("load_error", f"not fail-to-pass: `{already[0]}` passes before the patch")
    e2e_before = run_command(spec["e2e"], tree, timeout, env) if spec.get("e2e") else None
    applied = git(["apply", "--whitespace=nowarn", str(patch.resolve())], tree, 60)
    if applied.returncode != 0:
        message = (applied.stderr.strip().splitlines() or ["git apply failed"])[0]
        return [
            (
                "*",
                "failed",
                {
                    "failure": {
                        "kind": "patch_error",
                        "message": f"{patch.name} does not apply: {message}",
                        "log_tail": applied.stderr[-TAIL:],
                    },
                    "failed_checks": [],
                    "applied": False,
                },
            )
        ]
    changed = git(["diff", "--name-only"], tree, 60).stdout.split()
    ftp = [run_command(c, tree, timeout, env) for c in spec["fail_to_pass"]]
    ptp = [run_command(c, tree, timeout, env) for c in spec["pass_to_pass"]]
    e2e_after = run_command(spec["e2e"], tree, timeout, env) if spec.get("e2e") else None
    reasons = [f"fail-to-pass {describe(r)}" for r in ftp if r["returncode"] != 0]
    reasons += [f"pass-to-pass {describe(r)}" for r in ptp if r["returncode"] != 0]
    checks = [] if spec["kernel_file"] in changed else [f"kernel_file: the patch does not change {spec['kernel_file']}"]
    e2e_failed = [describe(r) for r in (e2e_before, e2e_after) if r and r["returncode"] != 0]
    reasons += [f"e2e {d}" for d in e2e_failed]
    timed = bool(e2e_before and e2e_after and not e2e_failed)
    speedup = e2e_before["wall_s"] / e2e_after["wall_s"] if timed and e2e_after["wall_s"] > 0 else None
    return [
        (
            "e2e",
            "passed" if not reasons and not checks else "failed",
            {
                "correct": not reasons,
                "applied": True,
                "changed_files": changed,
                "fail_to_pass": ftp,
                "pass_to_pass": ptp,
                "ftp_passed": sum(r["returncode"] == 0 for r in ftp),
                "ptp_passed": sum(r["returncode"] == 0 for r in ptp),
                "reasons": reasons,
                "failed_checks": checks,
                "medians_ms": {
                    "candidate": e2e_after["wall_s"] * 1e3 if timed else None,
                    "initial": e2e_before["wall_s"] * 1e3 if timed else None,
                },
                "timed": timed,
                "speedup_vs_original": speedup,
                "speedup_vs_eager": None,
                "speedup_vs_compile": None,
                "test_wall_s": round(sum(r["wall_s"] for r in ftp + ptp), 3),
            },
        )
    ]
