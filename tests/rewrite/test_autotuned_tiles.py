"""wgmma-tiles and attention-tiles on autotuned kernels: the target's shape goes first in the literal
configs (the authors' configs kept, an equal one moved rather than repeated, the other constexprs of the
first config carried over), the search's choice too; the launch is left alone."""

from __future__ import annotations

from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.goldens import FIXTURES

WGMMA = FIXTURES / "wgmma-tiles" / "before_autotuned.py"
HOPPER = 'triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3)'


def configs(source: str) -> list[str]:
    block = source.split("configs=[", 1)[1].split("],", 1)[0]
    return [line.strip().rstrip(",") for line in block.splitlines() if line.strip()]


def test_a_new_shape_goes_first_and_the_authors_configs_stay():
    source = WGMMA.read_text()
    pre = REWRITES["wgmma-tiles"].check(RewriteContext(source, str(WGMMA)))
    assert pre.holds and "first in its autotune configs BLOCK_M=32, BLOCK_N=32, BLOCK_K=32" in pre.reason
    new = REWRITES["wgmma-tiles"].apply(RewriteContext(source, str(WGMMA)))
    assert configs(new) == [HOPPER, *configs(source)]
    assert new.split("def addmm(", 1)[1] == source.split("def addmm(", 1)[1]  # the launch is as it was


def test_an_equal_config_moves_first_instead_of_being_repeated():
    source = WGMMA.read_text().replace(
        '        triton.Config({"BLOCK_M": 64, ', f'        {HOPPER},\n        triton.Config({{"BLOCK_M": 64, '
    )
    assert len(configs(source)) == 3 and configs(source)[1] == HOPPER
    new = REWRITES["wgmma-tiles"].apply(RewriteContext(source, str(WGMMA)))
    assert configs(new) == [HOPPER, configs(source)[0], configs(source)[2]]


def test_the_searched_shape_is_the_one_written():
    ctx = RewriteContext(
        WGMMA.read_text(),
        str(WGMMA),
        params=(("BLOCK_K", 64), ("BLOCK_M", 64), ("BLOCK_N", 128), ("num_stages", 4), ("num_warps", 4)),
    )
    new = REWRITES["wgmma-tiles"].apply(ctx)
    assert configs(new)[0] == (
        'triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4)'
    )


def test_an_autotuned_attention_gets_a_hopper_shape_first():
    path = FIXTURES / "attention-tiles" / "before_autotuned.py"
    new = REWRITES["attention-tiles"].apply(RewriteContext(path.read_text(), str(path)))
    assert configs(new)[0] == 'triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3)'
    assert "BLOCK_D=triton.next_power_of_2(HEAD_DIM)" in new  # the head-dim tile stays at the launch


def test_a_first_config_with_a_constexpr_that_is_not_a_literal_is_declined():
    """A new config copies the first one's other constexprs: a name there (`"GROUP_M": GROUP`) cannot be copied."""
    source = WGMMA.read_text().replace('"GROUP_M": 8}', '"GROUP_M": GROUP}', 1)
    pre = REWRITES["wgmma-tiles"].check(RewriteContext(source, str(WGMMA)))
    assert not pre.holds and "sets GROUP_M to something other than an integer literal" in pre.reason
