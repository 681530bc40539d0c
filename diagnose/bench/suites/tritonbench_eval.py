"""TritonBench's own evaluation beside diagnose's (the task format: `diagnose/bench/suites/tritonbench.py`),
and the worker side of scoring.

- A whole file run as `python FILE` would run it (as `__main__`, stdout captured, a fixed seed): its
  call accuracy is that it runs to the end, its execution accuracy that its stdout equals the
  original's (`EVAL/eval_G|T/0_call_acc.py`, `1_exe_acc.py`).
- perf_G (`performance_metrics/perf_G/golden_metrics/<name>_perf.py`): the script imports the task as
  `TritonBench_v1.<name>`; the candidate module is put there, the script's `performance_metrics()` gives
  the shapes (`get_input_tensors`, `to_cuda`) and the call (`call_op`), each timed with
  `triton.testing.do_bench` (median) as the script does; TritonBench's speedup is the sum of the
  original's milliseconds over the sum of the candidate's (`EVAL/eval_G/2_efficiency.py`). The number
  of golden shapes comes from `golden_results/<name>.json`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import runpy
import statistics
import sys
import traceback
import types
from pathlib import Path

from diagnose.runtime import cpu_standin
from diagnose.task import import_task_file
from diagnose.task.replay import seed_global_generators
from diagnose.verify import instrument, tensors
from diagnose.verify.compare import compare_one
from diagnose.verify.uninitialized import uninitialized_filled

TIMING_REPS = 20
PERF_G = "performance_metrics/perf_G"
# A fixed seed for the runs of whole files (TritonBench runs each in a fresh process: a fixed RNG state).
SCRIPT_SEED = 0


def suite_kind(folder: Path) -> str:
    """ "T" for a TritonBench-T folder (its name says so), else "G"."""
    return "T" if re.search(r"_T(_|$)", folder.name) else "G"


def run_script(path: str) -> dict:
    """Run a whole TritonBench file as `python FILE` would (as `__main__`), its stdout captured: did it
    run to the end, what did it print (worker side)."""
    import torch  # deferred: torch is heavy

    torch.manual_seed(SCRIPT_SEED)
    printed = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = f"SystemExit: {exc.code}"
    except BaseException as exc:  # noqa: BLE001 - the file's own failure is what is measured
        error = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return {"ran": error is None, "stdout": printed.getvalue(), "error": error}


def perf_times(module, perf_script: str, stem: str, bench=None) -> dict:
    """Milliseconds per shape of a perf_G script's operator call, with `module` standing in for the
    `TritonBench_v1.<stem>` it imports (worker side). `bench(fn) -> ms` defaults to the script's own
    `triton.testing.do_bench` median."""
    try:
        if bench is None:
            import triton.testing  # deferred: triton is heavy

            def bench(fn):
                return triton.testing.do_bench(fn, return_mode="median")

        package = sys.modules.setdefault("TritonBench_v1", types.ModuleType("TritonBench_v1"))
        package.__path__ = []
        sys.modules[f"TritonBench_v1.{stem}"] = module
        setattr(package, stem, module)
        folder = str(Path(perf_script).resolve().parent.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(f"diagnose_perf_{stem}", perf_script)
        script = importlib.util.module_from_spec(spec)
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(script)
            metrics = script.performance_metrics()
            metrics.get_input_tensors()
            out = []
            for tensors_ in metrics.input_tensors:
                inputs = metrics.to_cuda(tensors_)
                out.append(float(bench(lambda inputs=inputs: metrics.call_op(inputs))))
        return {"ms": out}
    except Exception as exc:  # noqa: BLE001 - a perf script that does not run is reported, not fatal
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}


def checkout_root(path: Path) -> Path | None:
    """The TritonBench checkout a task file lies in (the folder holding `data/`), if any."""
    for parent in path.resolve().parents:
        if parent.name == "data" and (parent.parent / "performance_metrics").is_dir():
            return parent.parent
        if (parent / PERF_G).is_dir():
            return parent
    return None


def perf_script(path: Path) -> tuple[Path | None, int | None]:
    """(perf_G script, number of golden shapes) of a G task, where the checkout has them."""
    root = checkout_root(path)
    if root is None or suite_kind(path.parent) != "G":
        return None, None
    script = root / PERF_G / "golden_metrics" / f"{path.stem}_perf.py"
    if not script.is_file():
        return None, None
    golden = root / PERF_G / "golden_results" / f"{path.stem}.json"
    try:
        shapes = len(json.loads(golden.read_text())) if golden.is_file() else None
    except (ValueError, OSError):
        shapes = None
    return script, shapes


def predict_text(solution: Path) -> str | None:
    raw = solution.with_name(f"{solution.stem}.predict.txt")
    return raw.read_text(encoding="utf-8") if raw.is_file() else None


def tritonbench_verdict(results: dict) -> dict | None:
    """TritonBench's own call and execution accuracy from the two whole-file runs."""
    original, candidate = results["original"].get("script"), results["candidate"].get("script")
    if not original or not candidate:
        return None
    same = original["ran"] and candidate["ran"] and original["stdout"] == candidate["stdout"]
    return {
        "call": candidate["ran"],
        "exec": bool(same),
        "stdout_empty": not original["stdout"] and not candidate["stdout"],
        "error": candidate["error"],
    }


def perf_summary(results: dict, script: Path | None, shapes: int | None) -> dict | None:
    if script is None:
        return None
    ref, cand = results["original"].get("perf_g"), results["candidate"].get("perf_g")
    out = {"script": script.name, "golden_shapes": shapes, "timed": False}
    if ref and cand and "ms" in ref and "ms" in cand and len(ref["ms"]) == len(cand["ms"]) and sum(cand["ms"]):
        out.update(
            timed=True,
            ms_original=ref["ms"],
            ms_candidate=cand["ms"],
            speedup=round(sum(ref["ms"]) / sum(cand["ms"]), 4),
        )
    elif ref or cand:
        out["error"] = (cand or {}).get("error") or (ref or {}).get("error")
    return out


def install_standin(device: str) -> None:
    """The CPU stand-in for a GPU (the suite's tests create `device='cuda'` tensors) in an interpreted
    worker; the runtime installs it for the harness's own entries, not for this one."""
    if device != "cpu" or os.environ.get("DIAGNOSE_STANDIN") == "0":
        return

    cpu_standin.install(interpreter=os.environ.get("TRITON_INTERPRET") == "1")


def kernel_ms(test, kernels: list, device: str, reps: int = TIMING_REPS) -> float:
    """Median over `reps` calls of `test` of the summed device time of its Triton launches (worker side)."""
    import torch  # deferred: torch is heavy

    backend = getattr(torch, device)
    spans: list = []
    for kernel in kernels:

        def timed_run(*args, _original=kernel.run, **kwargs):
            start, end = backend.Event(enable_timing=True), backend.Event(enable_timing=True)
            start.record()
            out = _original(*args, **kwargs)
            end.record()
            spans.append((start, end))
            return out

        kernel.run = timed_run
    test()  # warm-up: compiles (and autotunes) outside the measurement
    backend.synchronize()
    totals = []
    for _ in range(reps):
        spans.clear()
        test()
        backend.synchronize()
        totals.append(sum(start.elapsed_time(end) for start, end in spans))
    return statistics.median(totals)


def flat(value, prefix: str = "") -> dict:
    """A test's result as {key: tensor or text}, keys in a stable order."""
    import torch  # deferred: torch is heavy

    def below(key) -> str:
        return f"{prefix}/{key}" if prefix else str(key)

    if isinstance(value, dict):
        return {k: v for key in sorted(value, key=str) for k, v in flat(value[key], below(key)).items()}
    if isinstance(value, (list, tuple)):
        return {k: v for i, item in enumerate(value) for k, v in flat(item, below(i)).items()}
    if isinstance(value, torch.Tensor):
        return {prefix or "value": value.detach().cpu()}
    if isinstance(value, (bool, int, float)):
        return {prefix or "value": torch.tensor(value)}
    if type(value).__module__ == "numpy" and getattr(getattr(value, "dtype", None), "kind", "O") in "biufc":
        return {prefix or "value": torch.tensor(value.copy())}  # as numbers, not text; the copy drops negative strides
    return {prefix or "value": str(value)}


def compare(original: dict, candidate: dict, overrides: dict) -> tuple[bool, float, str | None]:
    """(correct, max abs error, reason) of a candidate's test result against the original's, under the
    tolerance profile's `overrides` of the default table."""
    if list(original) != list(candidate):
        return False, 0.0, f"result keys {sorted(candidate)} != original {sorted(original)}"
    worst = 0.0
    for key, ref in original.items():
        out = candidate[key]
        if isinstance(ref, str) or isinstance(out, str):
            if ref != out:
                return False, worst, f"{key}: output differs from the original's"
            continue
        ok, max_abs, _, reason = compare_one(ref, out, overrides)
        if not ok:
            return False, max_abs, f"{key}: {reason}"
        worst = max(worst, max_abs)
    return True, worst, None


def run_tests(payload: dict) -> dict:
    """Worker side: run the TritonBench file as a script, import the combined file, call each test per
    seed, save what they returned, and time the perf_G script's shapes on a device."""
    install_standin(payload["device"])
    sys.path.insert(0, payload["folder"])
    script = run_script(payload["script"]) if payload.get("script") else None
    log = instrument.LaunchLog()
    instrument.watch_launches(log)  # before the import: kernels made at any time count, once they returned
    module = import_task_file(payload["path"])
    kernels = instrument.user_kernels()
    cases, times = [], {}
    for name in payload["tests"]:
        test = getattr(module, name)
        for seed in payload["seeds"]:
            seed_global_generators(seed)
            printed = io.StringIO()
            before = log.total()
            with contextlib.redirect_stdout(printed), uninitialized_filled(Path(payload["job_dir"])):
                value = test()
            value = printed.getvalue() if value is None else value
            path = Path(payload["job_dir"], f"{payload['side']}_{name}_{seed}.pt")
            cases.append(
                {
                    "group": name,
                    "seed": seed,
                    "launches": log.total() - before,
                    "outputs": tensors.save(flat(value), path),
                }
            )
        if payload["timed"]:
            with contextlib.redirect_stdout(io.StringIO()):
                times[name] = kernel_ms(test, kernels, payload["device"])
    perf = None
    if payload.get("perf_script") and payload["timed"]:
        perf = perf_times(module, payload["perf_script"], payload["stem"])
    return {"cases": cases, "times_ms": times, "script": script, "perf_g": perf}
