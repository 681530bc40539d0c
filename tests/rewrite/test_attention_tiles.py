"""attention-tiles on the benchmark attention kernel, and not on matmuls (wgmma-tiles' job)."""

from __future__ import annotations

import pytest

from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.table import REWRITES
from diagnose.targets import lookup
from tests.conftest import ROOT
from tests.rewrite.goldens import FIXTURES

ATTENTION = ROOT / "benchmarks" / "npukernel" / "level3" / "attention.py"
REWRITE = REWRITES["attention-tiles"]


def test_the_benchmark_attention_kernel_is_retuned():
    ctx = RewriteContext(ATTENTION.read_text(), str(ATTENTION))
    pre = REWRITE.check(ctx)
    assert pre.holds, pre.reason
    assert (pre.plan.tiles.query, pre.plan.tiles.key, pre.plan.tiles.head) == ("BLOCK_M", "BLOCK_N", "BLOCK_D")
    assert not REWRITES["wgmma-tiles"].check(ctx).holds
    new = REWRITE.apply(ctx)
    assert "BLOCK_M, BLOCK_N = 128, 64" in new
    assert "num_warps=8, num_stages=3" in new
    assert "BLOCK_D=triton.next_power_of_2(D)" in new, "the head-dim tile stays"


def test_the_search_space_starts_at_the_default_for_each_target():
    ctx = RewriteContext(ATTENTION.read_text(), str(ATTENTION))
    plan = REWRITE.check(ctx).plan
    space = REWRITE.search_space(ctx, plan)
    assert space[0] == {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}
    assert all(row["BLOCK_M"] // max(1, row["num_warps"] // 4) >= 64 for row in space), "wgmma's M per warpgroup"
    chosen = REWRITE.apply(ctx.with_params({"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}))
    assert "BLOCK_M, BLOCK_N = 64, 64" in chosen and "num_warps=4" in chosen and "num_stages=3" in chosen
    hip = RewriteContext(ctx.source, ctx.path, lookup("hip:gfx942"))
    assert REWRITE.search_space(hip, plan)[0]["num_stages"] == 1


def test_matmuls_are_refused():
    for path in (ROOT / "examples" / "matmul.py", FIXTURES / "wgmma-tiles" / "before.py"):
        pre = REWRITE.check(RewriteContext(path.read_text(), str(path)))
        assert not pre.holds and "no loop with two tl.dot calls" in pre.reason, pre.reason


@pytest.mark.slow
def test_add_autotune_tunes_attention_over_the_attention_tiles_and_stays_correct(tmp_path):
    from diagnose.task import load_task
    from diagnose.verify.harness import CheckOptions, verify

    ctx = RewriteContext(ATTENTION.read_text(), str(ATTENTION))
    assert "is not a matmul of loaded (M, K) and (K, N) tiles" in REWRITES["wgmma-tiles"].check(ctx).reason
    pre = REWRITES["add-autotune"].check(ctx)
    assert pre.holds and "tune BLOCK_M, BLOCK_N, num_warps, num_stages keyed on S, D" in pre.reason
    new = REWRITES["add-autotune"].apply(ctx)
    assert 'triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3)' in new
    candidate = tmp_path / "attention_autotuned.py"
    candidate.write_text(new)
    verdict = verify(load_task(ATTENTION, candidate), CheckOptions(seeds=(0, 1), baselines=("eager",)))
    assert verdict.passed, verdict.failure
