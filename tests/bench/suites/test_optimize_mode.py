"""Optimize mode of the suite adapters: the agent on each suite's kernels as they are (a KernelBench or
MultiKernelBench solution against its problem, a TritonBench-G original), through the sweep's one agent
path; rows and report as the default suite's; the suite's folders byte for byte as they were; the
reference always the suite's, whatever a solution defines."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.bench import report
from diagnose.bench.suites import kernelbench, multikernelbench, tritonbench
from diagnose.bench.sweep import SweepOptions
from diagnose.task import import_task_file, load_task
from tests.bench.suites.conftest import SUITES, failure, run_sweep

KB = SUITES / "kernelbench"
MKB = SUITES / "multikernelbench_checkout"
TB = SUITES / "tritonbench_checkout"
OWN_MODEL = KB / "own_model_solutions"


def snapshot(*folders: Path) -> dict[str, bytes]:
    """Every file under the folders, by path, with its bytes."""
    return {str(p): p.read_bytes() for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


def handed(adapter, suite: Path, entry: str, folder: Path, **options) -> tuple[list, list[Path]]:
    """What `adapter.optimize_task` does with one task: its rows, and the files it gave the agent (the
    agent here runs nothing and returns no rows: what is looked at is the file it was handed)."""
    given: list[Path] = []
    options = SweepOptions(**options)
    [task] = [t for t in adapter.load(suite, options) if t.entry.id == entry]
    rows = adapter.optimize_task(task, options, folder, lambda path: given.append(Path(path)) or [])
    return rows, given


def test_a_solutions_own_model_and_inputs_do_not_replace_the_problems(tmp_path):
    import inspect

    import torch

    rows, [path] = handed(kernelbench, KB / "suite", "level1/2_ReLU", tmp_path / "run", solutions=OWN_MODEL)
    assert rows == [] and path.parent == tmp_path / "run", "the task file goes to the entry's runs folder"
    task = load_task(path)
    assert not task.has_input_groups and task.kernels == ("double_kernel",)
    module = import_task_file(path)
    assert not hasattr(module, "get_input_groups"), "the solution's own groups are not the task's"
    [x] = module.get_inputs()
    assert tuple(x.shape) == (16, 48), "the problem's inputs, not the solution's empty ones"
    probe = torch.tensor([-1.0, 2.0])
    assert module.Model()(probe).tolist() == [0.0, 2.0], "the problem's Model (ReLU) is the reference"
    assert "double_kernel[" in inspect.getsource(module.ModelNew), "ModelNew is the solution's"


def test_a_json_task_is_merged_with_its_reference_groups(tmp_path):
    rows, [path] = handed(
        multikernelbench, MKB, "npukernelbench_level0/1_scale_rows", tmp_path / "run", solutions=MKB / "output"
    )
    module = import_task_file(path)
    groups = module.get_input_groups()
    assert set(groups) and all(name.startswith("test_case") for name in groups), "the CPU's scaled shipped cases"
    assert (tmp_path / "run" / "cpu_shapes.json").is_file(), "the CPU scale is kept for every load of the run"
    assert "scale_kernel" in load_task(path).kernels


def test_tasks_the_agent_cannot_run_on_are_rows_saying_why(tmp_path):
    [(_, status, data)], given = handed(kernelbench, KB / "suite", "level1/2_ReLU", tmp_path)
    assert given == [] and status == "failed" and data["failure"]["kind"] == "no_solution"
    assert data["failure"]["message"].startswith("optimize mode runs the agent on a solution's ModelNew")
    [(_, status, data)], given = handed(multikernelbench, MKB, "activation/relu", tmp_path)
    assert given == [] and status == "failed" and data["failure"]["kind"] == "no_solution"
    [(_, status, data)], given = handed(tritonbench, TB, "data/TritonBench_T_v1/relu", tmp_path)
    assert given == [] and status == "unsupported" and "PyTorch function" in data["failure"]["message"]
    [(_, status, data)], given = handed(
        tritonbench,
        TB,
        "data/TritonBench_G_v1/scale",
        tmp_path,
        solutions=TB / "LLM_generated" / "Bench_G" / "model_comp.jsonl",
    )
    assert given == [] and status == "unsupported" and "--solutions is for score mode" in data["failure"]["message"]


def test_a_tritonbench_g_original_goes_to_the_agent_as_it_is(tmp_path):
    rows, [path] = handed(tritonbench, TB, "data/TritonBench_G_v1/scale", tmp_path)
    assert path == TB / "data" / "TritonBench_G_v1" / "scale.py"


def test_hidden_folders_in_a_suite_are_not_tasks(tmp_path):
    import shutil

    suite = tmp_path / "tb"
    shutil.copytree(TB / "data", suite / "data")
    cache = suite / "data" / "TritonBench_G_v1" / ".diagnose_cache" / "tasks" / "scale-0123"
    cache.mkdir(parents=True)
    shutil.copy(TB / "data" / "TritonBench_G_v1" / "scale.py", cache / "scale.py")
    ids = {t.entry.id for t in tritonbench.load(suite, SweepOptions())}
    assert not any(".diagnose_cache" in i for i in ids) and "data/TritonBench_G_v1/scale" in ids


def optimize(fmt: str, suite: Path, db: Path, **options):
    from diagnose.agent.state import Budget

    return run_sweep(
        fmt, suite, db, mode="optimize", jobs=1, budget=Budget(max_candidates=1, max_wall_s=300), **options
    )


@pytest.mark.slow
def test_kernelbench_solutions_are_optimized_against_their_problems(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    before = snapshot(KB)
    summary, rows = optimize(
        "kernelbench",
        KB / "suite",
        tmp_path / "r.sqlite",
        solutions=KB / "solutions",
        pattern="level1/2_ReLU,level1/5_Unsolved",
    )
    assert (summary.ran, summary.failed) == (2, 1)
    [relu] = rows["level1/2_ReLU"]
    assert relu.status == "passed" and relu.data["run_id"] and relu.data["deepest_level"]
    assert "no solution for it in" in failure(rows["level1/5_Unsolved"])
    assert (tmp_path / "r.runs" / "level1" / "2_ReLU" / "2_ReLU.py").is_file()
    text = report.render([r for rs in rows.values() for r in rs], "md")
    assert "## Distribution" in text and "level1/2_ReLU" in text
    # A solution bringing its own Model and inputs is judged against the problem's, and fails.
    summary, rows = optimize(
        "kernelbench", KB / "suite", tmp_path / "own.sqlite", solutions=OWN_MODEL, pattern="level1/2_ReLU"
    )
    [own] = rows["level1/2_ReLU"]
    assert own.status == "failed" and own.data["failure"]["kind"] == "incorrect", own.data
    assert snapshot(KB) == before, "the suite and its solutions stay byte for byte as they were"


@pytest.mark.slow
def test_multikernelbench_solutions_are_optimized_against_their_tasks(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    before = snapshot(MKB)
    summary, rows = optimize("multikernelbench", MKB, tmp_path / "r.sqlite", solutions=MKB / "output")
    assert (summary.ran, summary.failed) == (2, 1)
    scaled = rows["npukernelbench_level0/1_scale_rows"]
    assert scaled and all(r.status == "passed" and r.data["run_id"] for r in scaled)
    assert all(r.group.startswith("test_case") and "shapes" in r.data["cpu_shapes"] for r in scaled)
    assert "no solution for it in" in failure(rows["activation/relu"])
    assert snapshot(MKB) == before


@pytest.mark.slow
def test_tritonbench_g_originals_are_optimized_as_they_are(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    fixed = SUITES / "tritonbench" / "fixed_inputs"
    before = snapshot(TB, fixed)
    summary, rows = optimize("tritonbench", fixed, tmp_path / "r.sqlite")
    assert (summary.ran, summary.failed) == (1, 0), rows
    ramp = rows["ramp_scale"]
    assert ramp and all(r.status == "passed" and r.data["run_id"] and r.data["deepest_level"] for r in ramp)
    assert "## Distribution" in report.render(ramp, "md")
    summary, rows = optimize("tritonbench", TB, tmp_path / "t.sqlite", pattern="relu")
    assert rows["data/TritonBench_T_v1/relu"][0].status == "unsupported"
    assert snapshot(TB, fixed) == before
