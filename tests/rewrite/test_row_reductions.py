"""retune-launch on row reductions (one program per row, BLOCK the loop's chunk): the per-row scalar
store needs no mask, the block is not grid-coupled, and the rewritten tasks stay correct; and it is
called for by the profiling codes PRF003 / PRF005."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import libcst as cst
import pytest

from diagnose.records import Evidence, Finding, Location
from diagnose.rewrite.dependence import dependence
from diagnose.rewrite.launch_values import tile_accesses_masked
from diagnose.optimizer.pipeline import called_by
from diagnose.rewrite.codemods.retune_launch import steps_a_loop
from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.source import kernels
from diagnose.rewrite.table import REWRITES
from diagnose.targets import lookup
from tests.rewrite.conftest import SEEDS, SOAK
from tests.rewrite.goldens import ROOT

BENCH = ROOT / "benchmarks" / "npukernel"
# task -> (its test_* input groups, the launch line before and after BLOCK=2048 with 8 warps)
TASKS = {
    "level3/gemv.py": (
        ("test_m37_k1300_fp32", "test_m29_k517_fp16"),
        "gemv_kernel[(M,)](a, x, y, K, a.stride(0), BLOCK=1024)",
        "gemv_kernel[(M,)](a, x, y, K, a.stride(0), BLOCK=2048, num_warps=8)",
    ),
    "level2/reduce_sum_dim.py": (
        ("test_3x17x1500_fp32", "test_2x9x300_bf16"),
        "BLOCK = min(1024, triton.next_power_of_2(n))\n        row_sum_kernel[(b * m,)](x, out, n, BLOCK=BLOCK)",
        "BLOCK = min(2048, triton.next_power_of_2(n))\n        row_sum_kernel[(b * m,)](x, out, n, BLOCK=BLOCK, num_warps=8)",
    ),
}
PARAMS = {"BLOCK": 2048, "num_warps": 8}


def context(source: str, path: str, params: dict | None = None) -> RewriteContext:
    return RewriteContext(source, path, lookup("cuda:sm90"), (), (), tuple(sorted((params or {}).items())))


def kernel_of(source: str):
    (kernel,) = kernels(cst.parse_module(source)).values()
    return kernel


@pytest.mark.parametrize("task", sorted(TASKS))
def test_precondition_holds_and_only_the_launch_values_change(task):
    path = BENCH / task
    source = path.read_text()
    pre = REWRITES["retune-launch"].check(context(source, str(path)))
    assert pre.holds, pre.reason
    _, before, after = TASKS[task]
    rewritten = REWRITES["retune-launch"].apply(context(source, str(path), PARAMS))
    assert before in source and after in rewritten
    assert rewritten == source.replace(before, after)
    assert REWRITES["add-autotune"].check(context(source, str(path))).holds


def test_only_block_dependent_accesses_need_a_mask():
    kernel = kernel_of("""
@triton.jit
def k(x_ptr, y_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * n
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    p = base
    for start in range(0, n, BLOCK):
        p = base + start
        acc += tl.load(p + cols, mask=start + cols < n)
    first = tl.load(idx_ptr + row)
    tl.store(y_ptr + row, tl.sum(acc, axis=0) + tl.load(base + first))
""")
    dependent = dependence(kernel.node, "BLOCK").names
    assert {"cols", "acc", "start", "p"} <= dependent  # `p` through its rebinding in the loop
    assert not {"row", "base", "first"} & dependent
    assert tile_accesses_masked(kernel, "BLOCK")
    # a grid axis computed from the block changes its program ids, so `y_ptr + row` too
    assert "row" in dependence(kernel.node, "BLOCK", frozenset({0})).names
    assert "row" not in dependence(kernel.node, "BLOCK", frozenset({1})).names
    assert not tile_accesses_masked(kernel, "BLOCK", frozenset({0}))


@pytest.mark.parametrize(
    "body",
    [
        "    p = x_ptr + row\n    for start in range(0, n, BLOCK):\n        p += start\n    tl.store(p, 1.0)",
        "    off = row\n    if row < BLOCK:\n        off = 0\n    tl.store(x_ptr + off, 1.0)",
        "    with tl.static_assert(True):\n        off = row\n    tl.store(x_ptr + off, 1.0)",
        "    tl.atomic_cas(x_ptr + row + tl.arange(0, BLOCK), 0, 1)",
        "    if n < BLOCK:\n        tl.store(x_ptr + row, 1.0)",  # runs under a block-dependent condition
        "    if n < BLOCK:\n        return\n    tl.store(x_ptr + row, 1.0)",  # after a block-dependent exit
    ],
)
def test_an_unmasked_access_that_may_depend_on_the_block_is_refused(body):
    kernel = kernel_of(f"@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    row = tl.program_id(0)\n{body}\n")
    assert not tile_accesses_masked(kernel, "BLOCK")


def test_a_block_that_must_cover_the_row_is_not_retuned():
    # one pass over a row of at most BLOCK values: a smaller block would drop the rest, masked off
    source = (
        (BENCH / "level2/reduce_sum_dim.py")
        .read_text()
        .replace(
            "    for start in range(0, n_cols, BLOCK):\n        mask = start + cols < n_cols\n"
            "        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)",
            "    acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)",
        )
    )
    pre = REWRITES["retune-launch"].check(context(source, "single_pass.py"))
    assert not pre.holds and "neither multiplies a program id nor steps a loop" in pre.reason


@pytest.mark.parametrize(
    ("loop", "covers"),
    [
        ("range(0, n, BLOCK)", True),
        ("tl.range(row, n, BLOCK, num_stages=2)", True),
        ("range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0))", True),  # grid-stride
        ("range(0, 4 * BLOCK, BLOCK)", False),  # the bound follows the block
        ("tl.static_range(BLOCK // 32)", False),  # a loop inside the tile
    ],
)
def test_what_counts_as_a_loop_over_the_data(loop, covers):
    kernel = kernel_of(
        f"@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    row = tl.program_id(0)\n"
        f"    for i in {loop}:\n        pass\n"
    )
    assert steps_a_loop(kernel, "BLOCK") is covers


def test_a_host_block_shared_with_a_launch_that_cannot_follow_it_is_not_retuned():
    # loss_mse: BLOCK also sizes the partial-sum kernel, whose grid is not computed from BLOCK
    source = (BENCH / "level2/loss_mse.py").read_text()
    pre = REWRITES["retune-launch"].check(context(source, "loss_mse.py"))
    assert not pre.holds and "BLOCK also reaches the launch of sq_diff_partial_kernel" in pre.reason


def test_profiling_findings_call_for_the_launch_retunes():
    evidence = (Evidence("profile", "estimate", "Bottleneck", "analysis"),)
    findings = [
        Finding(code, "profiled", "warning", "medium", Location("gemv.py", 50), evidence)
        for code in ("PRF003", "PRF005", "PRF001", "PRF002")
    ]
    for rewrite_id in ("retune-launch", "add-autotune"):  # compute-bound (PRF002) is the matrix engine's business
        assert called_by(REWRITES[rewrite_id], findings, ()) == (
            "PRF003@gemv.py:50",
            "PRF005@gemv.py:50",
            "PRF001@gemv.py:50",
        )


@pytest.mark.slow
def test_rewritten_row_reductions_stay_correct(tmp_path):
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, verify

    def one(task: str):
        original = BENCH / task
        candidate = tmp_path / Path(task).name
        candidate.write_text(REWRITES["retune-launch"].apply(context(original.read_text(), str(original), PARAMS)))
        options = CheckOptions(device="cpu", seeds=SEEDS, soak=SOAK, initial=original, groups=TASKS[task][0])
        return verify(load_task(original, candidate), options)

    with ThreadPoolExecutor(max_workers=len(TASKS)) as pool:
        verdicts = dict(zip(sorted(TASKS), pool.map(one, sorted(TASKS))))
    for task, verdict in verdicts.items():
        assert verdict.failure is None, (task, verdict.failure)
        assert verdict.cases and all(c.passed for c in verdict.cases), (task, verdict.cases)
        assert verdict.passed, task


@pytest.mark.slow
def test_a_launch_bound_short_row_reduction_gets_several_rows_per_program(tmp_path):
    """PRF005 (reduce_sum_dim's 128-element rows ran at 0.21x of torch.sum on the H200) calls for
    rows-per-program; the rewritten entry keeps its rows' arithmetic and stays correct on the interpreter."""
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, verify

    evidence = (Evidence("profile", "estimate", "Bottleneck", "analysis"),)
    finding = Finding("PRF005", "Launch-bound", "warning", "medium", Location("reduce_sum_dim.py", 40), evidence)
    assert called_by(REWRITES["rows-per-program"], [finding], ()) == ("PRF005@reduce_sum_dim.py:40",)
    path = BENCH / "level2/reduce_sum_dim.py"
    new = REWRITES["rows-per-program"].apply(RewriteContext(path.read_text(), str(path), lookup("cuda:sm90")))
    assert "row_sum_kernel[(triton.cdiv(b * m, 4),)](x, out, n, BLOCK=BLOCK, n_rows=b * m, ROWS=4)" in new
    assert "        if row < n_rows:\n            x_row = x_ptr + row.to(tl.int64) * n_cols" in new
    candidate = tmp_path / "reduce_sum_dim_rows.py"
    candidate.write_text(new)
    verdict = verify(load_task(path, candidate), CheckOptions(seeds=(0, 1), baselines=("eager",)))
    assert verdict.passed, verdict.failure


@pytest.mark.slow
def test_online_softmax_fuses_the_max_and_sum_passes_of_long_rows(tmp_path):
    """loss_cross_entropy's vocabularies (32000-128256) are too long for single-pass-row: online-softmax
    fuses its max and sum passes into one read of the row, and the rewritten task stays correct."""
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, verify

    path = BENCH / "level2/loss_cross_entropy.py"
    source = path.read_text()
    pre = REWRITES["online-softmax"].check(context(source, str(path)))
    assert pre.holds and pre.kernels == ("row_loss_kernel",), pre.reason
    new = REWRITES["online-softmax"].apply(context(source, str(path)))
    kernel = new.split("def row_loss_kernel", 1)[1].split("\n@triton.jit", 1)[0]
    assert kernel.count("for start in range(0, n_cols, BLOCK):") == 1 and kernel.count("tl.load(x_row + start") == 1
    assert "s = s * tl.exp(m - m_shift) + tl.exp(x - m_shift)" in kernel
    assert (
        "    row_max = tl.max(m, axis=0)\n    # rescale every lane to the row max\n"
        '    s = tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max))\n'
        "    lse = tl.log(tl.sum(s, axis=0)) + row_max" in kernel
    )
    assert new.split("class ModelNew", 1)[1] == source.split("class ModelNew", 1)[1], "the launch is unchanged"
    candidate = tmp_path / "loss_cross_entropy_online.py"
    candidate.write_text(new)
    groups = ("test_rows37_vocab1000_fp32", "test_rows13_vocab2050_bf16")
    options = CheckOptions(device="cpu", seeds=SEEDS, soak=SOAK, initial=path, groups=groups)
    verdict = verify(load_task(path, candidate), options)
    assert verdict.failure is None, verdict.failure
    assert verdict.cases and all(c.passed for c in verdict.cases), verdict.cases
    assert verdict.passed


def test_single_pass_row_then_online_softmax_on_softmax():
    """examples/softmax.py: single-pass-row (first in the table) makes a short row one block and keeps the
    three-pass kernel for long rows; online-softmax then fuses that kernel's max and sum passes, and
    leaves its normalize pass and the single-block twin as they are."""
    path = ROOT / "examples" / "softmax.py"
    order = list(REWRITES)
    assert order.index("single-pass-row") < order.index("online-softmax")
    short = REWRITES["single-pass-row"].apply(context(path.read_text(), str(path)))
    pre = REWRITES["online-softmax"].check(context(short, str(path)))
    assert pre.holds and pre.kernels == ("softmax_kernel",), pre.reason
    both = REWRITES["online-softmax"].apply(context(short, str(path)))
    multi = both.split("def softmax_kernel(", 1)[1].split("\n@triton.jit", 1)[0]
    assert multi.count("for start in range(0, n_cols, BLOCK):") == 2 and "tl.store(out_row + start + cols" in multi
    twin = "def softmax_kernel_single_block"
    assert both.split(twin, 1)[1].split("\nclass ", 1)[0] == short.split(twin, 1)[1].split("\nclass ", 1)[0]
