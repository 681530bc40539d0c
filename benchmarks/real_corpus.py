"""How far `diagnose` gets on real kernel libraries, on a machine without a GPU.

    python benchmarks/real_corpus.py --work SCRATCH --out RESULTS \
        --repo liger=/path/to/Liger-Kernel:src/liger_kernel/ops:test/transformers \
        --repo flaggems=/path/to/FlagGems:src/flag_gems/ops,src/flag_gems/fused,src/flag_gems/runtime/backend/_nvidia,src/flag_gems/runtime/backend/_ascend:tests \
        --repo tutorials=/path/to/triton-tutorials:.:. \
        [--env flaggems:GEMS_VENDOR=nvidia] [--commit liger=SHA ...] [--stages scan,import,capture,inspect,optimize]

`--repo NAME=ROOT:KERNEL_DIRS:TEST_PATHS` (comma-separated, relative to ROOT). ROOT is copied once into
`SCRATCH/src/NAME` and every step works on that copy, so nothing is ever written into the checkout
(`optimize` writes `NAME.diagnose.patch` beside the module, pytest and Python write caches). The
settings of each repository (its test selection, environment, setup) are the `PROFILES` below; each
choice is printed with the results. Steps, per repository:

1. scan: kernel files (a `@triton.jit` anywhere in the file) and kernels (`diagnose.task.module.
   jit_functions`); files under an `_ascend` folder are written for triton-ascend and counted apart.
   Each kernel gets a role from the source: `kernel` (launched), `helper` (called by another jit
   function of its file, or returning a value), `pointwise_dynamic` (FlagGems' scalar functions that
   its code generator wraps in a generated kernel).
2. import: each kernel file imported in a fresh `python` as `diagnose inspect`'s worker imports it: the
   CPU stand-in (`cpu_standin.install(interpreter=False)`), its dotted name from its package root, the
   demos and benchmarks it runs at import turned into `pass` (`without_import_time_work`).
3. capture: `diagnose capture --device D --timeout T --project COPY -- <the repository's own tests>`, one
   test file at a time; D is `cpu` (Triton's interpreter) or `none` (launches recorded, not run), per
   repository in `PROFILES`, with the test selection.
4. inspect: `diagnose inspect FILE --json --launches COPY/.diagnose/launches` per non-Ascend kernel
   file; each kernel is counted as compiled from a captured launch, from a guessed launch, failed
   (reason), or absent from the output.
5. optimize: `diagnose optimize FILE --launches ... --max-candidates 3 --seeds 2 --max-wall 240` on
   files with captured launches, in the documented order, while the total budget lasts.

Results: `SCRATCH/state.json` (every step's raw rows; a step already done is not run again unless
`--redo STEP`; `--stages ''` only prints the report; `--capture-only a.py,b.py` captures those test
files again, their launches added to the others), and in `--out`: `rows.json` (one line per kernel
file and per capture run) and `summary.md` (the tables printed at the end). Not a test: it takes
hours on a 2-core machine (`benchmarks/results/2026-12-04-real-corpus/README.md`).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnose.task.module import identity, is_jit_decorator, jit_functions  # noqa: E402

STAGES = ("scan", "import", "capture", "inspect", "optimize")

# --- choices, per repository ----------------------------------------------------------------------
#
# tests:       "pytest" (each test file `test_*.py` under TEST_PATHS, one `pytest` run each) or "script"
#              (each kernel file run as `python FILE`: the Triton tutorials test at module level).
# pythonpath:  folders of the copy put on PYTHONPATH for the tests (the projects' own layout).
# pytest_args: given to every pytest run.
# skip:        test files not run, with the reason.
# k:           a `-k` expression for a test file whose smallest parametrizations still take too long.
# setup:       files created in the copy (never in the checkout) before anything runs, with the reason.
# env:         environment for every step (also settable with --env NAME:KEY=VALUE).
# device:      `diagnose capture --device`: cpu (the kernels run in Triton's interpreter) or none (launches
#              recorded, not run: for a project the interpreter cannot import).
#
# Every pytest run also gets `-p rc_subset` (below): of each test function's parametrizations only one
# is kept: one not skipped here by a `skip`/`skipif(True)` mark (bf16 cases are skipped on this CPU),
# then the smallest (the product of the integers in its parameters), then the first; and
# `--timeout PER_TEST` (pytest-timeout), so that one slow test cannot eat a file's time limit. No `-x`:
# a test failing on the CPU (an assertion the interpreter cannot meet) must not hide the next ones.
PROFILES: dict[str, dict] = {
    "liger": {
        "tests": "pytest",
        "pythonpath": ["src", "."],
        "pytest_args": [],
        "device": "cpu",
        "setup": {
            "test/__init__.py": "this Python (pyenv 3.11) ships the standard library's `test` package, which "
            "shadows Liger's namespace package `test/` (`from test.utils import ...` in "
            "conftest.py); an empty __init__.py makes Liger's `test` a regular package",
        },
        "skip": {
            "test_cute_moe_autograd.py": "CuTe DSL, not Triton",
            "test_cutedsl_fused_linear_cross_entropy_sm90.py": "CuTe DSL, not Triton",
            "test_cutedsl_rms_norm.py": "CuTe DSL, not Triton",
            "test_cutedsl_rms_norm_fastpath.py": "CuTe DSL, not Triton",
            "test_cutedsl_rope.py": "CuTe DSL, not Triton",
            "test_swiglu_cutedsl.py": "CuTe DSL, not Triton",
            "test_cutile_backend.py": "cuTile, not Triton",
            "test_cutile_fused_linear_cross_entropy_sm90.py": "cuTile, not Triton",
            "test_cutile_rms_norm.py": "cuTile, not Triton",
            "test_cutile_rope.py": "cuTile, not Triton",
            "test_monkey_patch.py": "model-level: patches Hugging Face models (no kernel of its own)",
            "test_auto_model.py": "model-level: Hugging Face auto classes",
            "test_trainer_integration.py": "model-level: a Hugging Face Trainer run",
        },
        "k": {},
    },
    "flaggems": {
        "tests": "pytest",
        "pythonpath": ["src"],
        # FlagGems' own option: one small shape per test (`tests/accuracy_utils.py`, QUICK_MODE).
        "pytest_args": ["--mode", "quick"],
        "env": {"GEMS_VENDOR": "nvidia"},  # the project's documented setting to import without a GPU
        # Recorded, not run: chosen when no FlagGems module imported under TRITON_INTERPRET=1 (`LibEntry`,
        # src/flag_gems/utils/libentry.py, unwraps its kernel until it finds a `JITFunction`). Since issue
        # 26 the CPU stand-in's interpreted kernels are `JITFunction`s and FlagGems runs in the interpreter
        # too (`cpu`); the whole suite has not been captured that way yet.
        "device": "none",
        "setup": {},
        "skip": {},
        "k": {},
    },
    "tutorials": {
        "tests": "script",
        "pythonpath": [],
        # No pandas/matplotlib here on purpose: `triton.testing.perf_report` then fails at its first
        # benchmark (sizes up to 2^27, hours in the interpreter) after the tutorial's test code ran.
        "env": {"MPLBACKEND": "Agg"},
        "device": "cpu",
        "setup": {},
        "skip": {},
        "k": {},
    },
}

PLUGIN = '''"""pytest plugin of benchmarks/real_corpus.py: keep one parametrization of each test function: one that no
mark skips here, the smallest (product of the integers in its parameters), the first of equals."""


def _size(value):
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return max(abs(value), 1)
    if isinstance(value, (tuple, list)):
        out = 1
        for v in value:
            out *= _size(v)
        return out
    return 1


def _skipped(item):
    """Whether a mark skips the item here (a `skip`, or a `skipif` whose condition is a true bool)."""
    if any(True for _ in item.iter_markers("skip")):
        return True
    for mark in item.iter_markers("skipif"):
        conditions = mark.args or (mark.kwargs.get("condition"),)
        if any(c is True for c in conditions):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    best = {}
    for index, item in enumerate(items):
        key = item.nodeid.split("[")[0]
        spec = getattr(item, "callspec", None)
        size = 1
        for value in (spec.params.values() if spec is not None else ()):
            size *= _size(value)
        score = (_skipped(item), size)
        if key not in best or score < best[key][0]:
            best[key] = (score, index)
    keep = {index for _, index in best.values()}
    dropped = [it for i, it in enumerate(items) if i not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [it for i, it in enumerate(items) if i in keep]
'''

# As `diagnose inspect`'s worker imports a module (a compiling worker with no GPU: the CPU stand-in, no
# interpreter): under its dotted name from its package root, the statements that run demos, tests or
# benchmarks at import turned into `pass` (`diagnose.task.module.without_import_time_work`).
IMPORT_SNIPPET = (
    "import ast, importlib.util, sys\n"
    "from pathlib import Path\n"
    "from diagnose.runtime import cpu_standin\n"
    "from diagnose.task.module import without_import_time_work\n"
    "cpu_standin.install(interpreter=False)\n"
    "name, root, path = sys.argv[1:4]\n"
    "sys.path.insert(0, root)\n"
    "source = Path(path).read_text()\n"
    "code = compile(without_import_time_work(source, ast.parse(source)), path, 'exec')\n"
    "name += '__diagnose'  # beside the package's own copy, as import_task_file names it\n"
    "module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))\n"
    "sys.modules[name] = module\n"
    "exec(code, module.__dict__)\n"
)


# --- helpers --------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Repo:
    def __init__(self, spec: str, work: Path):
        name, _, rest = spec.partition("=")
        parts = rest.split(":")
        if not name or len(parts) != 3:
            raise SystemExit(f"--repo {spec!r}: write NAME=ROOT:KERNEL_DIRS:TEST_PATHS")
        self.name = name
        self.source = Path(parts[0]).resolve()
        self.kernel_dirs = [d for d in parts[1].split(",") if d]
        self.test_paths = [d for d in parts[2].split(",") if d]
        self.copy = work / "src" / name
        self.profile = PROFILES.get(
            name, {"tests": "pytest", "pythonpath": ["."], "pytest_args": [], "setup": {}, "skip": {}, "k": {}}
        )
        self.env = dict(self.profile.get("env", {}))

    @property
    def launches(self) -> Path:
        return self.copy / ".diagnose" / "launches"

    def rel(self, path: Path | str) -> str:
        """A path of the copy, relative to it (launch files already hold paths relative to the project)."""
        if not Path(path).is_absolute():
            return Path(path).as_posix()
        return str(Path(path).resolve().relative_to(self.copy.resolve()))


def normalize(text: str, repos: list[Repo], work: Path) -> str:
    """A reason without the scratch paths, so that the same failure groups with itself."""
    for repo in repos:
        text = text.replace(str(repo.copy) + "/", "").replace(str(repo.copy), repo.name)
    text = text.replace(str(work) + "/", "")
    text = re.sub(r"0x[0-9a-f]+", "0x..", text)
    return text.strip()[:220]


def last_error_line(text: str) -> str:
    """The exception line of a traceback (or the last non-empty line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b.*", line) or line.startswith(
            "diagnose: error"
        ):
            return line
    return lines[-1] if lines else "(no output)"


def base_env(work: Path, repo: Repo) -> dict[str, str]:
    env = dict(os.environ)
    env.update(repo.env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["DIAGNOSE_CACHE_DIR"] = str(work / "cache")
    env.pop("TRITON_INTERPRET", None)
    return env


def run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int | None, str, str, float]:
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        code = None
    return code, out, err, time.monotonic() - start


def diagnose_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "diagnose"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "diagnose.cli"]


# --- 1. scan --------------------------------------------------------------------------------------


def roles(tree: ast.Module) -> dict[str, str]:
    """Each jit function's role, read from the source."""
    nodes = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(is_jit_decorator(d) for d in n.decorator_list)
    ]
    names = {n.name for n in nodes}
    called: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                if name in names and name != node.name:
                    called.add(name)
    out = {}
    for node in nodes:
        decorators = " ".join(ast.unparse(d) for d in node.decorator_list)
        returns = any(isinstance(s, ast.Return) and s.value is not None for s in ast.walk(node))
        if "pointwise_dynamic" in decorators:
            out.setdefault(node.name, "pointwise_dynamic")
        elif node.name in called or returns:
            out.setdefault(node.name, "helper")
        else:
            out.setdefault(node.name, "kernel")
    return out


def scan(repo: Repo) -> list[dict]:
    rows = []
    for folder in repo.kernel_dirs:
        base = repo.copy / folder
        files = sorted(base.rglob("*.py")) if folder != "." else sorted(base.glob("*.py"))
        for path in files:
            if ".diagnose" in path.parts:
                continue
            text = path.read_text(errors="replace")
            if "jit" not in text:
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError as exc:
                rows.append(
                    {
                        "repo": repo.name,
                        "file": repo.rel(path),
                        "ascend": "_ascend" in path.parts,
                        "kernels": [],
                        "roles": {},
                        "scan_error": f"SyntaxError: {exc}",
                    }
                )
                continue
            kernels = list(dict.fromkeys(jit_functions(tree)))
            if not kernels:
                continue
            # `jit_functions` takes any `@<x>.jit`: a file that never mentions triton holds another DSL's
            # kernels (CuTe DSL's `@cute.jit`); counted apart, like the Ascend files.
            rows.append(
                {
                    "repo": repo.name,
                    "file": repo.rel(path),
                    "ascend": "_ascend" in repo.rel(path).split("/") or "triton" not in text,
                    "apart": "ascend"
                    if "_ascend" in repo.rel(path).split("/")
                    else "not triton"
                    if "triton" not in text
                    else None,
                    "module": identity(path).name,
                    "kernels": kernels,
                    "roles": roles(tree),
                }
            )
    return rows


# --- 2. import ------------------------------------------------------------------------------------


def import_one(repo: Repo, row: dict, work: Path, repos: list[Repo], timeout: float) -> dict:
    path = repo.copy / row["file"]
    ident = identity(path)
    env = base_env(work, repo)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    code, out, err, seconds = run(
        [sys.executable, "-c", IMPORT_SNIPPET, ident.name, str(ident.root), str(path)], work / "runs", env, timeout
    )
    if code is None:
        reason = f"timed out after {timeout:.0f} s"
    elif code != 0:
        reason = normalize(last_error_line(err), repos, work)
    else:
        reason = None
    return {"ok": code == 0, "seconds": round(seconds, 1), "reason": reason}


# --- 3. capture -----------------------------------------------------------------------------------


def test_jobs(repo: Repo, scanned: list[dict]) -> list[dict]:
    """(name, command after `--`, skipped reason) for each of the repository's test files."""
    profile = repo.profile
    jobs = []
    if profile["tests"] == "script":
        for row in scanned:
            if not row["ascend"]:
                name = row["file"]
                jobs.append({"test": name, "argv": ["python", name], "skip": profile["skip"].get(name)})
        return jobs
    files = []
    for folder in repo.test_paths:
        base = repo.copy / folder
        files += sorted(base.glob("test_*.py")) if base.is_dir() else [base]
    for path in files:
        name = repo.rel(path)
        argv = [
            "python",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "rc_subset",
            "--timeout",
            "{per_test}",
            *profile.get("pytest_args", []),
        ]
        if path.name in profile.get("k", {}):
            argv += ["-k", profile["k"][path.name]]
        jobs.append({"test": name, "argv": argv + [name], "skip": profile["skip"].get(path.name)})
    return jobs


def capture_one(repo: Repo, job: dict, work: Path, file_timeout: float, per_test: float) -> dict:
    env = base_env(work, repo)
    paths = [str(work / "plugin")] + [str(repo.copy / p) for p in repo.profile.get("pythonpath", [])]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    argv = [a.replace("{per_test}", str(int(per_test))) for a in job["argv"]]
    device = repo.profile.get("device", "cpu")
    cmd = (
        diagnose_cmd()
        + ["capture", "--device", device, "--timeout", str(int(file_timeout)), "--project", str(repo.copy), "--"]
        + argv
    )
    code, out, err, seconds = run(cmd, repo.copy, env, file_timeout + 300)
    summary = re.search(r"the command (timed out|exited with (-?\d+)) after (\d+) s.*?; (\d+) distinct launches", err)
    tail = [line for line in (out + "\n" + err).splitlines() if line.strip()]
    pytest_line = next(
        (
            line.strip("= ")
            for line in reversed(tail)
            if re.search(r"\d+ (passed|failed|error|skipped|deselected|no tests ran)", line)
        ),
        None,
    )
    return {
        "repo": repo.name,
        "test": job["test"],
        "command": "diagnose capture --device %s --timeout %d --project %s -- %s"
        % (device, int(file_timeout), repo.name, " ".join(argv)),
        "rc": code,
        "seconds": round(seconds, 1),
        "timed_out": bool(summary and summary.group(1) == "timed out"),
        "command_rc": int(summary.group(2)) if summary and summary.group(2) else None,
        "launches": int(summary.group(4)) if summary else 0,
        "pytest": pytest_line,
        "error": None if summary else last_error_line(err),
        "tail": tail[-15:] if not summary or int(summary.group(4)) == 0 else [],
    }


def captured(repo: Repo) -> dict[str, list[dict]]:
    """Launch records by the module file that launched them (relative path)."""
    out: dict[str, list[dict]] = {}
    if not repo.launches.is_dir():
        return out
    for file in sorted(repo.launches.glob("*.json")):
        data = json.loads(file.read_text())
        try:
            rel = repo.rel(data["path"])
        except ValueError:
            rel = data["path"]
        out.setdefault(rel, []).extend(data["launches"])
    return out


# --- 4. inspect -----------------------------------------------------------------------------------


def inspect_one(repo: Repo, row: dict, work: Path, repos: list[Repo], timeout: float) -> dict:
    repo.launches.mkdir(parents=True, exist_ok=True)
    cmd = diagnose_cmd() + [
        "inspect",
        str(repo.copy / row["file"]),
        "--json",
        "--launches",
        str(repo.launches),
        "--timeout",
        str(int(timeout)),
    ]
    code, out, err, seconds = run(cmd, work / "runs", base_env(work, repo), timeout + 300)
    result = {"rc": code, "seconds": round(seconds, 1), "kernels": {}, "error": None}
    try:
        data = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        data = None
    if data is None or "kernels" not in data:
        message = (data or {}).get("error", {}).get("message") if isinstance(data, dict) else None
        result["error"] = normalize(message or last_error_line(err) or f"exit {code}", repos, work)
        if code is None:
            result["error"] = f"timed out after {timeout + 300:.0f} s"
        result["stderr"] = [line for line in err.splitlines() if line.strip()][-12:]
        return result
    for entry in data["kernels"]:
        name = entry.get("kernel")
        source = "guessed" if "guessed launch" in (entry.get("title") or "") else "captured"
        if "error" in entry:
            state = {
                "state": "failed",
                "source": source,
                "reason": normalize(
                    (entry["error"].get("message") or "").splitlines()[0]
                    if entry["error"].get("message")
                    else "compile failed",
                    repos,
                    work,
                ),
            }
        else:
            state = {"state": "facts", "source": source, "facts": len(entry.get("evidence", []))}
        old = result["kernels"].get(name)
        if old is None or (old["state"] != "facts" and state["state"] == "facts"):
            result["kernels"][name] = state
    return result


# --- 5. optimize ----------------------------------------------------------------------------------


def changed_kernels(original: str, candidate: str) -> list[str]:
    """The jit functions whose source differs between the module and a candidate's copy of it."""
    marker = "# ---- diagnose task harness"
    candidate = candidate.split(marker)[0]

    def bodies(text: str) -> dict[str, str]:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return {}
        return {
            n.name: ast.unparse(n)
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(is_jit_decorator(d) for d in n.decorator_list)
        }

    old, new = bodies(original), bodies(candidate)
    return sorted(name for name in new if old.get(name) != new[name])


def optimize_one(repo: Repo, row: dict, work: Path, repos: list[Repo], args) -> dict:
    path = repo.copy / row["file"]
    cmd = diagnose_cmd() + [
        "optimize",
        str(path),
        "--launches",
        str(repo.launches),
        "--max-candidates",
        str(args.max_candidates),
        "--seeds",
        "2",
        "--max-wall",
        str(int(args.max_wall)),
        "--device",
        "cpu",
    ]
    code, out, err, seconds = run(cmd, work / "runs", base_env(work, repo), args.max_wall + 600)
    result = {
        "rc": code,
        "seconds": round(seconds, 1),
        "proposed": 0,
        "verified": 0,
        "kernels_proposed": [],
        "kernels_verified": [],
        "outcome": None,
        "error": None,
        "failures": [],
    }
    report = re.search(r"report (\S+report\.json)", out)
    lines = [line for line in out.splitlines() if line.strip()]
    result["outcome"] = next(
        (line for line in lines if line.startswith(("No ", "Best", "The best", "no "))),
        lines[-2] if len(lines) > 1 else None,
    )
    if code != 0 or not report:
        result["error"] = "timed out" if code is None else normalize(last_error_line(err), repos, work)
        result["stderr"] = [line for line in err.splitlines() if line.strip()][-12:]
    if report and Path(report.group(1)).exists():
        data = json.loads(Path(report.group(1)).read_text())
        result["report"] = report.group(1)
        original = path.read_text()
        for cand in data.get("candidates", []):
            source = (cand.get("candidate") or {}).get("source") or ""
            touched = changed_kernels(original, source)
            result["proposed"] += 1
            result["kernels_proposed"] = sorted(set(result["kernels_proposed"]) | set(touched))
            verdict = cand.get("verdict") or {}
            if verdict.get("passed"):
                result["verified"] += 1
                result["kernels_verified"] = sorted(set(result["kernels_verified"]) | set(touched))
            else:
                failure = verdict.get("failure") or {}
                result["failures"].append(normalize(f"{failure.get('kind')}: {failure.get('message')}", repos, work))
        result["patch"] = (path.parent / (path.stem + ".diagnose.patch")).exists()
    return result


# --- driving --------------------------------------------------------------------------------------


def load_state(work: Path) -> dict:
    path = work / "state.json"
    return json.loads(path.read_text()) if path.exists() else {}


def save_state(work: Path, state: dict) -> None:
    tmp = work / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(work / "state.json")


def prepare(repo: Repo, fresh: bool) -> None:
    if fresh and repo.copy.exists():
        shutil.rmtree(repo.copy)
    if not repo.copy.exists():
        shutil.copytree(repo.source, repo.copy, ignore=shutil.ignore_patterns("__pycache__", ".diagnose", ".git"))
    for rel, _reason in repo.profile.get("setup", {}).items():
        target = repo.copy / rel
        if not target.exists():
            target.write_text("")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", action="append", required=True, help="NAME=ROOT:KERNEL_DIRS:TEST_PATHS")
    parser.add_argument("--work", required=True, type=Path, help="scratch folder (copies, caches, state)")
    parser.add_argument("--out", type=Path, help="write rows.json and summary.md here")
    parser.add_argument("--env", action="append", default=[], help="NAME:KEY=VALUE for one repository's steps")
    parser.add_argument("--commit", action="append", default=[], help="NAME=SHA, recorded in the results")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--redo", default="", help="steps to run again although done (comma-separated)")
    parser.add_argument("--fresh", action="store_true", help="copy the checkouts again (drops captured launches)")
    parser.add_argument("--import-timeout", type=float, default=120)
    parser.add_argument("--capture-timeout", type=float, default=150, help="seconds per test file")
    parser.add_argument("--per-test-timeout", type=float, default=60, help="seconds per test (pytest-timeout)")
    parser.add_argument("--inspect-timeout", type=float, default=300)
    parser.add_argument("--optimize-budget", type=float, default=2400, help="seconds for all optimize runs")
    parser.add_argument("--max-wall", type=float, default=240)
    parser.add_argument("--max-candidates", type=int, default=3)
    parser.add_argument("--only", default="", help="only these repositories (comma-separated)")
    parser.add_argument(
        "--capture-only",
        default="",
        help="capture again only these test files (base names, comma-separated); launches add to those captured",
    )
    args = parser.parse_args(argv)

    work = args.work.resolve()
    if ROOT in [work, *work.parents]:
        raise SystemExit("--work must be outside the diagnose checkout")
    (work / "runs").mkdir(parents=True, exist_ok=True)
    (work / "plugin").mkdir(exist_ok=True)
    (work / "plugin" / "rc_subset.py").write_text(PLUGIN)
    repos = [Repo(spec, work) for spec in args.repo]
    for item in args.env:
        name, _, assignment = item.partition(":")
        key, _, value = assignment.partition("=")
        for repo in repos:
            if repo.name == name:
                repo.env[key] = value
    only = {n for n in args.only.split(",") if n}
    active = [r for r in repos if not only or r.name in only]
    stages = [s for s in args.stages.split(",") if s]
    redo = {s for s in args.redo.split(",") if s}
    only_tests = {t for t in args.capture_only.split(",") if t}
    state = load_state(work)
    state.setdefault("walls", {})
    state["commits"] = {**state.get("commits", {}), **dict(c.split("=", 1) for c in args.commit)}
    state["repos"] = {
        r.name: {
            "source": str(r.source),
            "kernel_dirs": r.kernel_dirs,
            "test_paths": r.test_paths,
            "env": r.env,
            "profile": r.profile,
        }
        for r in repos
    }

    for repo in active:
        prepare(repo, args.fresh)
        state.setdefault(repo.name, {})

    def done(repo: Repo, stage: str) -> bool:
        return stage in state[repo.name] and stage not in redo

    def wall(repo: Repo, stage: str, seconds: float) -> None:
        state["walls"][f"{repo.name}:{stage}"] = round(seconds, 1)

    for repo in active:
        rs = state[repo.name]
        if "scan" in stages and not done(repo, "scan"):
            rs["scan"] = scan(repo)
            save_state(work, state)
        if "scan" not in rs:
            rs["scan"] = scan(repo)
        log(f"{repo.name}: {len(rs['scan'])} kernel files, {sum(len(r['kernels']) for r in rs['scan'])} kernels")

    if "import" in stages:
        for repo in active:
            rs = state[repo.name]
            if done(repo, "import"):
                continue
            start, rows = time.monotonic(), {}
            for i, row in enumerate(rs["scan"]):
                if row["ascend"]:  # apart: not imported (they need triton-ascend, or are not Triton)
                    continue
                rows[row["file"]] = import_one(repo, row, work, repos, args.import_timeout)
                log(
                    f"import {repo.name} {i + 1}/{len(rs['scan'])} {row['file']}: "
                    f"{'ok' if rows[row['file']]['ok'] else rows[row['file']]['reason']}"
                )
            rs["import"] = rows
            wall(repo, "import", time.monotonic() - start)
            save_state(work, state)

    if "capture" in stages:
        for repo in active:
            rs = state[repo.name]
            if only_tests:  # a second pass over some test files: their rows replaced, launches merged
                rows_before = {c["test"]: c for c in rs.get("capture", [])}
            elif done(repo, "capture"):
                continue
            elif "capture" in redo and repo.launches.exists():
                shutil.rmtree(repo.launches)
            start, rows = time.monotonic(), []
            for job in test_jobs(repo, rs["scan"]):
                if only_tests and Path(job["test"]).name not in only_tests:
                    if job["test"] in rows_before:
                        rows.append(rows_before[job["test"]])
                    continue
                if job["skip"]:
                    rows.append({"repo": repo.name, "test": job["test"], "skipped": job["skip"]})
                    continue
                row = capture_one(repo, job, work, args.capture_timeout, args.per_test_timeout)
                rows.append(row)
                log(
                    f"capture {repo.name} {job['test']}: {row['launches']} launches, {row['seconds']} s, "
                    f"{'timed out' if row['timed_out'] else 'rc ' + str(row['command_rc'])}; {row['pytest']}"
                )
            rs["capture"] = rows
            wall(repo, "capture-again" if only_tests else "capture", time.monotonic() - start)
            save_state(work, state)

    if "inspect" in stages:
        for repo in active:
            rs = state[repo.name]
            if done(repo, "inspect"):
                continue
            start, rows = time.monotonic(), {}
            for i, row in enumerate(rs["scan"]):
                if row["ascend"] or not row["kernels"]:
                    continue
                rows[row["file"]] = inspect_one(repo, row, work, repos, args.inspect_timeout)
                got = rows[row["file"]]
                log(
                    f"inspect {repo.name} {i + 1}/{len(rs['scan'])} {row['file']}: rc {got['rc']}, "
                    f"{sum(k['state'] == 'facts' for k in got['kernels'].values())}/{len(row['kernels'])} with facts"
                    + (f"; {got['error']}" if got["error"] else "")
                )
            rs["inspect"] = rows
            wall(repo, "inspect", time.monotonic() - start)
            save_state(work, state)

    if "optimize" in stages:
        # The sample: every non-Ascend kernel file with a captured launch, repositories taken in turn
        # (one file of each, then the next of each), files in path order; a run starts only while the
        # budget has at least --max-wall seconds left.
        queues = []
        for repo in active:
            rs = state[repo.name]
            if done(repo, "optimize"):
                continue
            rs["optimize"] = {}
            have = captured(repo)
            queues.append((repo, [r for r in rs["scan"] if not r["ascend"] and have.get(r["file"])]))
        start = time.monotonic()
        while any(q for _, q in queues):
            for repo, queue in queues:
                if not queue:
                    continue
                if time.monotonic() - start + args.max_wall > args.optimize_budget:
                    queue.clear()
                    continue
                row = queue.pop(0)
                got = optimize_one(repo, row, work, repos, args)
                state[repo.name]["optimize"][row["file"]] = got
                log(
                    f"optimize {repo.name} {row['file']}: rc {got['rc']}, {got['proposed']} proposed, "
                    f"{got['verified']} verified, {got['seconds']} s; {got['outcome'] or got['error']}"
                )
                save_state(work, state)
        state["walls"]["optimize"] = round(time.monotonic() - start, 1)
        save_state(work, state)

    state["environment"] = environment()
    save_state(work, state)
    text, rows = summarize(state, repos)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "summary.md").write_text(text + "\n")
        (args.out / "rows.json").write_text(dump_rows(rows))
    return 0


def environment() -> dict:
    import importlib.metadata as md

    versions = {"python": platform.python_version(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    for name in ("torch", "triton", "numpy", "transformers", "scipy", "pytest", "pytest-timeout"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
        versions["diagnose"] = head + (" (with uncommitted changes)" if dirty.strip() else "")
    except OSError:
        pass
    return versions


# --- the report -----------------------------------------------------------------------------------


def summarize(state: dict, repos: list[Repo]) -> tuple[str, dict]:
    out = ["# Real-corpus benchmark", ""]
    rows_out = {
        "environment": state.get("environment"),
        "commits": state.get("commits"),
        "walls_s": state.get("walls"),
        "files": [],
        "captures": [],
    }
    table = [
        "| repository | kernel files | kernels (kernel/helper/pointwise) | apart: Ascend files (kernels); "
        "other-DSL files (kernels) | imported "
        "files | captured: test files with launches | distinct launches | kernels with a launch | kernels "
        "with IR facts (captured + guessed) | failed to compile | file failed | no entry | optimize: files run | files (kernels) "
        "proposed | files (kernels) verified |",
        "|" + "---|" * 15,
    ]
    totals = [0] * 19
    reasons: dict[str, dict[str, dict[str, int]]] = {}
    for repo in repos:
        rs = state.get(repo.name)
        if not rs or "scan" not in rs:
            continue
        scan_rows = rs["scan"]
        main_rows = [r for r in scan_rows if not r["ascend"]]
        asc = [r for r in scan_rows if r.get("apart") == "ascend"]
        other = [r for r in scan_rows if r.get("apart") == "not triton"]
        kernels = sum(len(r["kernels"]) for r in main_rows)
        role_count = {"kernel": 0, "helper": 0, "pointwise_dynamic": 0}
        for r in main_rows:
            for k in r["kernels"]:
                role_count[r["roles"].get(k, "kernel")] += 1
        imports = rs.get("import", {})
        imported = sum(1 for r in main_rows if imports.get(r["file"], {}).get("ok"))
        have = captured(repo)
        launches = sum(len(v) for k, v in have.items() if k in {r["file"] for r in main_rows})
        # A kernel has a launch when a record names it and the file it is defined in.
        launched: set[tuple[str, str]] = set()
        for records in have.values():
            for rec in records:
                kfile = rec.get("kernel_file")
                try:
                    kfile = repo.rel(kfile) if kfile else None
                except ValueError:
                    pass
                launched.add((kfile, rec["kernel"]))
        captures = rs.get("capture", [])
        tests_with = sum(1 for c in captures if c.get("launches"))
        tests_run = sum(1 for c in captures if "skipped" not in c)
        insp = rs.get("inspect", {})
        facts_c = facts_g = failed = absent = file_failed = 0
        opt = rs.get("optimize", {})
        for r in scan_rows:
            row = {
                "repo": repo.name,
                "file": r["file"],
                "ascend": r["ascend"],
                "module": r.get("module"),
                "kernels": {},
            }
            imp = imports.get(r["file"], {})
            row["import"] = "ok" if imp.get("ok") else imp.get("reason")
            row["launches"] = len(have.get(r["file"], []))
            ins = insp.get(r["file"])
            if ins is not None:
                row["inspect_rc"] = ins["rc"]
                row["inspect_s"] = ins["seconds"]
                if ins.get("error"):
                    row["inspect_error"] = ins["error"]
            for k in r["kernels"]:
                entry = {"role": r["roles"].get(k, "kernel"), "launched": (r["file"], k) in launched}
                if ins is not None:
                    got = ins["kernels"].get(k)
                    if got is None:
                        entry["inspect"] = "file failed" if ins.get("error") else "no entry"
                    elif got["state"] == "facts":
                        entry["inspect"] = f"facts ({got['source']} launch)"
                    else:
                        entry["inspect"] = f"failed ({got['source']} launch): {got['reason']}"
                row["kernels"][k] = entry
                if r["ascend"] or ins is None:
                    continue
                got = ins["kernels"].get(k)
                if got is None and ins.get("error"):
                    file_failed += 1
                if got is None:
                    absent += 0 if ins.get("error") else 1
                    why = f"file: {ins['error']}" if ins.get("error") else f"no entry ({entry['role']})"
                    reasons.setdefault(repo.name, {}).setdefault("inspect", {}).setdefault(why, 0)
                    reasons[repo.name]["inspect"][why] += 1
                elif got["state"] == "facts":
                    if got["source"] == "guessed":
                        facts_g += 1
                    else:
                        facts_c += 1
                else:
                    failed += 1
                    why = f"{got['source']} launch: {got['reason']}"
                    reasons.setdefault(repo.name, {}).setdefault("inspect", {}).setdefault(why, 0)
                    reasons[repo.name]["inspect"][why] += 1
            if r["file"] in opt:
                o = opt[r["file"]]
                row["optimize_kernels_verified"] = _kernels_of(o, "verified", have.get(r["file"], []))
                row["optimize"] = {
                    k: o.get(k)
                    for k in (
                        "rc",
                        "seconds",
                        "proposed",
                        "verified",
                        "kernels_proposed",
                        "kernels_verified",
                        "outcome",
                        "error",
                        "failures",
                        "patch",
                    )
                }
            rows_out["files"].append(row)
            if not r["ascend"] and not imp.get("ok") and imp:
                reasons.setdefault(repo.name, {}).setdefault("import", {}).setdefault(imp["reason"], 0)
                reasons[repo.name]["import"][imp["reason"]] += 1
        with_launch = sum(1 for r in main_rows for k in r["kernels"] if (r["file"], k) in launched)
        ofiles = len(opt)
        oprop = sum(1 for o in opt.values() if o["proposed"])
        over = sum(1 for o in opt.values() if o["verified"])
        okprop = sum(len(_kernels_of(o, "proposed", have.get(f, []))) for f, o in opt.items())
        okver = sum(len(_kernels_of(o, "verified", have.get(f, []))) for f, o in opt.items())
        values = [
            len(main_rows),
            kernels,
            len(asc),
            sum(len(r["kernels"]) for r in asc),
            imported,
            tests_with,
            tests_run,
            launches,
            with_launch,
            facts_c,
            facts_g,
            failed,
            absent,
            ofiles,
            oprop,
            over,
            len(other),
            sum(len(r["kernels"]) for r in other),
            file_failed,
        ]
        totals = [a + b for a, b in zip(totals, values)]
        table.append(_row(repo.name, values, role_count, okprop, okver))
        rows_out["captures"] += captures
    table.append(_row("**total**", totals, None, None, None))
    out += table
    out += [
        "",
        "Apart: Ascend files (they need triton-ascend) and files whose `.jit` kernels are another DSL's "
        "(`@cute.jit`, no triton in the file); they are not imported, inspected or run. "
        '"file failed": `inspect` failed for the whole file (exit 2/3), so none of its kernels compiled; '
        '"no entry": the file compiled but the kernel is not in the output (no launch of it was captured '
        "or guessed). Optimize kernels: the jit functions a candidate changed (a candidate that changed only "
        "launch options counts for the kernels the file launched).",
        "",
    ]
    out.append(
        "## Targets (>= 90% of non-Ascend kernels in modules that import, with IR facts from a captured or "
        "guessed launch)"
    )
    out.append("")
    for repo in repos:
        rs = state.get(repo.name)
        if not rs or "inspect" not in rs:
            continue
        main_rows = [r for r in rs["scan"] if not r["ascend"]]
        total = sum(len(r["kernels"]) for r in main_rows)
        imported_k = sum(len(r["kernels"]) for r in main_rows if rs.get("import", {}).get(r["file"], {}).get("ok"))
        facts = sum(
            1
            for r in main_rows
            for k, v in rs["inspect"].get(r["file"], {}).get("kernels", {}).items()
            if v["state"] == "facts"
        )
        launchable = [(r, k) for r in main_rows for k in r["kernels"] if r["roles"].get(k) == "kernel"]
        facts_l = sum(
            1
            for r, k in launchable
            if rs["inspect"].get(r["file"], {}).get("kernels", {}).get(k, {}).get("state") == "facts"
        )
        out.append(
            f"- {repo.name}: imported {imported_k}/{total} kernels ({_pct(imported_k, total)}); IR facts "
            f"{facts}/{total} ({_pct(facts, total)}; of the {len(launchable)} launched kernels, not helpers: "
            f"{facts_l}, {_pct(facts_l, len(launchable))})"
        )
    for repo in repos:
        for step, found in reasons.get(repo.name, {}).items():
            out += ["", f"## {repo.name}: {step} failures by reason", ""]
            for why, n in sorted(found.items(), key=lambda kv: -kv[1]):
                out.append(f"- {n} x {why}")
    out += [
        "",
        "## Capture runs",
        "",
        "| repository | test file | launches | s | outcome | pytest |",
        "|---|---|---|---|---|---|",
    ]
    for c in rows_out["captures"]:
        if "skipped" in c:
            out.append(f"| {c['repo']} | {c['test']} | - | - | skipped: {c['skipped']} | |")
        else:
            status = (
                "timed out"
                if c["timed_out"]
                else f"exit {c['command_rc']}"
                if c["command_rc"] is not None
                else (c.get("error") or "?")
            )
            out.append(
                f"| {c['repo']} | {c['test']} | {c['launches']} | {c['seconds']:.0f} | {status} | "
                f"{(c.get('pytest') or '')[:90]} |"
            )
    out += [
        "",
        "## Optimize runs",
        "",
        "| repository | file | s | proposed | verified | kernels verified | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows_out["files"]:
        o = row.get("optimize")
        if o:
            out.append(
                f"| {row['repo']} | {row['file']} | {o['seconds']:.0f} | {o['proposed']} | {o['verified']} | "
                f"{', '.join(row['optimize_kernels_verified']) or '-'} | {(o['error'] or o['outcome'] or '')[:120]} |"
            )
    out += ["", "Wall times (s): " + ", ".join(f"{k} {v}" for k, v in sorted((state.get("walls") or {}).items()))]
    return "\n".join(out), rows_out


def dump_rows(rows: dict) -> str:
    """rows.json: one line per file and per capture run. A kernel is `name: role, launched|-, inspect`."""
    lines = ["{"]
    for key in ("environment", "commits", "walls_s"):
        lines.append(f" {json.dumps(key)}: {json.dumps(rows[key])},")
    for key in ("files", "captures"):
        lines.append(f' "{key}": [')
        items = []
        for item in rows[key]:
            item = {k: v for k, v in item.items() if k not in ("tail", "command")}
            if item.get("ascend"):  # apart: just how many kernels
                item = {"repo": item["repo"], "file": item["file"], "apart": True, "kernels": len(item["kernels"])}
            elif "kernels" in item:
                item["kernels"] = {
                    name: ", ".join(x for x in (e["role"], "launched" if e["launched"] else "-", e.get("inspect")) if x)
                    for name, e in item["kernels"].items()
                }
            if "optimize" in item:
                item["optimize"] = {k: v for k, v in item["optimize"].items() if v not in (None, [], False)}
            items.append("  " + json.dumps(item, separators=(",", ":")))
        lines.append(",\n".join(items))
        lines.append(" ]" + ("," if key == "files" else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _kernels_of(o: dict, which: str, records: list[dict]) -> list[str]:
    """The kernels a file's candidates changed; a candidate that changed only host code (launch options)
    counts for the kernels the file's captured launches name."""
    if not o.get(which):
        return []
    return o[f"kernels_{which}"] or sorted({r["kernel"] for r in records})


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def _row(name, v, roles_, okprop, okver) -> str:
    kernels = f"{v[1]}" + (f" ({roles_['kernel']}/{roles_['helper']}/{roles_['pointwise_dynamic']})" if roles_ else "")
    prop = f"{v[14]}" + (f" ({okprop})" if okprop is not None else "")
    ver = f"{v[15]}" + (f" ({okver})" if okver is not None else "")
    return (
        f"| {name} | {v[0]} | {kernels} | {v[2]} ({v[3]}); {v[16]} ({v[17]}) | {v[4]}/{v[0]} | {v[5]}/{v[6]} | {v[7]} | {v[8]} | "
        f"{v[9] + v[10]} ({v[9]} + {v[10]}) | {v[11]} | {v[18]} | {v[12]} | {v[13]} | {prop} | {ver} |"
    )


if __name__ == "__main__":
    sys.exit(main())
