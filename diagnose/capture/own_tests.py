"""A kernel module's own tests as the source of its launches, when nothing else gives them.

Files such as TritonBench-G's carry their test beside the kernel: `def test_xxx():` functions that
build inputs and call the host code, often called at module level too (`result_gold = test_xxx()`).
`launches_folder(path, device)` imports the module in a worker with the tracer installed (importing
runs the module-level calls), calls every module-level `test*` function that takes no arguments, and
keeps what they launched as launch files under `<cache>/captures/`, keyed by the file's content: a
second run of the same file reuses them. A test that fails after its launches still leaves them.

On the CPU the kernels run in Triton's interpreter, except launches larger than `INTERPRETED_ELEMENTS`:
those are recorded and not run (their outputs are left as allocated, and the test usually fails after
them, keeping what it launched), as `diagnose capture --device none` does for every launch.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import sys
from pathlib import Path

from diagnose.capture.tracer import Tracer
from diagnose.errors import UsageError
from diagnose.knobs import INTERPRET_MAX_ELEMENTS
from diagnose.runtime.runner import call
from diagnose.task.kernelbench import parse_file
from diagnose.task.launches import LaunchRecord, merge
from diagnose.task.module import identity

ENTRY = "diagnose.capture.own_tests:own_tests_job"
# On the CPU, launches with more tensor elements than this are recorded and not run: tests written for a
# GPU (unsloth's `test_rms_layernorm`: 21 x 3341 x 1024) would keep Triton's interpreter busy for hours.
INTERPRETED_ELEMENTS = 1 << 22


def test_functions(tree: ast.Module) -> list[str]:
    """Module-level functions named `test...` that can be called with no arguments."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            args = node.args
            required = len(args.posonlyargs) + len(args.args) - len(args.defaults)
            if required == 0 and not [k for k, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]:
                out.append(node.name)
    return out


def has_own_tests(path: Path) -> bool:
    return bool(test_functions(parse_file(path)))


def launches_folder(path: Path, cache: Path, device: str = "cpu", timeout_s: float = 600.0) -> Path:
    """A folder of launch files holding what the module's own tests launched (run once per content)."""
    source = path.read_bytes()
    folder = cache / "captures" / f"{path.stem}-{hashlib.sha256(bytes(path.resolve()) + source).hexdigest()[:12]}"
    done = folder / "done"
    if done.exists():
        return folder / ".diagnose" / "launches"
    interpret = device == "cpu"
    env = {INTERPRET_MAX_ELEMENTS: str(INTERPRETED_ELEMENTS)} if interpret else None
    result = call(ENTRY, {"path": str(path.resolve())}, timeout_s=timeout_s, interpret=interpret, env=env)
    if not result.ok:
        raise UsageError(f"{path}: running its own tests to find launches failed: {result.failure.message}")
    records = [LaunchRecord(**r) for r in result.value["records"]]
    if not records:
        ran = ", ".join(f"{name} ({outcome})" for name, outcome in result.value["tests"]) or "none"
        raise UsageError(f"{path}: its own tests launched no Triton kernel (tests: {ran})")
    folder.mkdir(parents=True, exist_ok=True)
    merge(folder, records)
    done.write_text("\n".join(f"{name}: {outcome}" for name, outcome in result.value["tests"]) + "\n")
    return folder / ".diagnose" / "launches"


def own_tests_job(payload: dict) -> dict:
    """Worker: import the module under the tracer and call its tests; return the records."""
    path = Path(payload["path"])
    module = identity(path)
    records: list[dict] = []
    tracer = Tracer(records.append)
    if str(module.root) not in sys.path:
        sys.path.insert(0, str(module.root))
    outcomes = []
    tracer.install()
    try:
        try:
            loaded = importlib.import_module(module.name)
        except Exception as exc:  # noqa: BLE001 - module-level test calls may fail after launching
            outcomes.append(("import", f"{type(exc).__name__}: {exc}"[:200]))
            loaded = sys.modules.get(module.name)
        for name in test_functions(parse_file(path)) if loaded is not None else []:
            fn = getattr(loaded, name, None)
            if (
                not callable(fn)
                or inspect.signature(fn).parameters
                and any(p.default is p.empty for p in inspect.signature(fn).parameters.values())
            ):
                continue
            try:
                fn()
                outcomes.append((name, "passed"))
            except Exception as exc:  # noqa: BLE001 - a failing test still made its launches
                outcomes.append((name, f"{type(exc).__name__}: {exc}"[:200]))
    finally:
        tracer.uninstall()
    keep = ("module_file", "kernel", "line", "launch", "call", "host", "by", "kernel_file")
    return {"records": [{k: r.get(k) for k in keep} for r in records], "tests": outcomes}
