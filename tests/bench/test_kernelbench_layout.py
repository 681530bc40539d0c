"""KernelBench as it ships: a checkout's root, level folders only, `.cuda()` references, CPU sizes, its
own tolerance and metrics (fixture: tests/fixtures/suites/kernelbench_checkout)."""

import json

import pytest

from diagnose.bench.suites import cpu_shapes, kernelbench, tolerance
from diagnose.bench.sweep import SweepOptions
from tests.bench.suites.conftest import SUITES, run_sweep

CHECKOUT = SUITES / "kernelbench_checkout"
PROBLEMS = CHECKOUT / "KernelBench"


def test_the_checkout_root_lists_only_level_problems():
    tasks = {t.entry.id: t for t in kernelbench.load(CHECKOUT, SweepOptions())}
    assert sorted(tasks) == ["level1/1_Scale", "level1/2_CudaAdd", "level4/1_tiny_hub_model"]
    assert [tasks[i].entry.level for i in sorted(tasks)] == [1, 1, 4]
    assert tasks["level1/1_Scale"].problem is None and tasks["level1/1_Scale"].solution is None
    hub = tasks["level4/1_tiny_hub_model"].problem
    assert hub.startswith(kernelbench.UNSUPPORTED) and "diagnose-fixtures/not-a-real-model" in hub
    [row] = kernelbench.score(tasks["level4/1_tiny_hub_model"], SweepOptions())
    assert row[1] == "unsupported" and "Hugging Face Hub" in row[2]["failure"]["message"]


def test_solutions_are_matched_under_the_checkout_root():
    tasks = {t.entry.id: t for t in kernelbench.load(CHECKOUT, SweepOptions(solutions=CHECKOUT / "solutions"))}
    assert tasks["level1/2_CudaAdd"].solution == CHECKOUT / "solutions" / "level1" / "2_CudaAdd.py"
    assert "no solution for it" in tasks["level1/1_Scale"].problem


def test_size_constants_are_scaled_down_on_the_cpu_only(tmp_path):
    path = str(PROBLEMS / "level1" / "1_Scale.py")
    record = tmp_path / "record.json"
    module = cpu_shapes.load_problem(path, "cpu", str(record))
    [x] = module.get_inputs()
    assert x.numel() <= cpu_shapes.ELEMENTS and x.shape[0] < 4096 and x.shape[1] < 32768
    assert module.get_init_inputs() == [3], "small constants (alpha = 3) are left alone"
    changed = json.loads(record.read_text())["changed"]
    assert module.dim == x.shape[1] and changed["dim"] == f"32768 -> {x.shape[1]}"
    assert cpu_shapes.load_problem(path, "cuda").dim == 32768


def test_kernelbench_tolerance_is_its_current_eval_and_v0_stays_reachable():
    current, v0 = dict(tolerance.overrides("kernelbench")), dict(tolerance.overrides("kernelbench-v0"))
    assert current["float32"] == (1e-4, 1e-4) and current["float16"] == current["bfloat16"] == (1e-2, 1e-2)
    assert v0["float32"] == (1e-2, 1e-2)
    assert dict(tolerance.overrides("multikernelbench"))["bfloat16"] == (1e-4, 1e-4)


def test_fast_p_has_kernelbench_thresholds_per_level():
    from diagnose.bench.store import Row

    def row(entry, status, eager):
        return Row("kernelbench:s", entry, "default", "score", "v", status, {"speedup_vs_eager": eager}, 0.0)

    rows = [
        row("level1/1_a", "passed", 0.6),
        row("level1/2_b", "failed", 3.0),
        row("level2/1_c", "passed", 0.9),
        row("level2/2_d", "passed", 1.2),
        row("level4/1_e", "unsupported", None),
    ]
    data = kernelbench.summary(rows)
    assert data["levels"]["level1"]["eager"] == {"0.0": 0.5, "0.5": 0.5, "0.8": 0.0, "1.0": 0.0, "1.5": 0.0, "2.0": 0.0}
    assert data["levels"]["level2"]["eager"]["0.8"] == 1.0 and data["levels"]["level2"]["eager"]["1.0"] == 0.5
    assert data["unsupported"] == 1 and "1 unsupported here" in kernelbench.render_summary(data)


def test_memory_limit_must_be_positive(cli):
    result = cli("bench", "kernelbench", str(CHECKOUT), "--memory-limit", "0")
    assert result.returncode == 2 and "must be more than 0" in result.stderr


@pytest.mark.slow
def test_checkout_scores_on_the_cpu_with_its_verdict_beside_ours(tmp_path):
    summary, rows = run_sweep("kernelbench", CHECKOUT, tmp_path / "self.sqlite", pattern="level1")
    assert (summary.ran, summary.failed) == (2, 0)
    [scale] = rows["level1/1_Scale"]
    assert scale.status == "passed" and scale.data["self_check"]
    assert scale.data["cpu_shapes"].startswith("scaled for the CPU: batch_size 4096 -> ")
    assert [c.split(":")[0] for c in scale.data["waived_checks"]] == ["launches_triton", "ghost_replay"]
    summary, rows = run_sweep(
        "kernelbench",
        CHECKOUT,
        tmp_path / "sol.sqlite",
        pattern="CudaAdd",
        solutions=CHECKOUT / "solutions",
        tolerance="kernelbench",
    )
    [add] = rows["level1/2_CudaAdd"]
    assert add.status == "passed" and "self_check" not in add.data and not add.data["failed_checks"]
    assert add.data["kernelbench"] == {"correct": True, "trials": 5, "tolerance": "kernelbench"}


def test_sizes_derived_from_other_constants_follow_them(tmp_path):
    path = tmp_path / "1_Gemm.py"
    path.write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self, n, shape):\n"
        "        super().__init__()\n        self.scale = torch.nn.Parameter(torch.ones(shape))\n\n"
        "    def forward(self, x):\n        return x * self.scale\n\n\n"
        "batch = 8192\nfeatures = 4096\nshape = (features,)\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch, features)]\n\n\n"
        "def get_init_inputs():\n    return [features, shape]\n"
    )
    module = cpu_shapes.load_problem(str(path), "cpu", str(tmp_path / "record.json"))
    assert module.shape == (module.features,) and module.features < 4096
