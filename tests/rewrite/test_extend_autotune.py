"""extend-autotune beyond its golden files: what it reads from the launch, its search space, and how
the new configs sit in a config list written any way."""

from __future__ import annotations

import pytest

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.goldens import FIXTURES, context

EXTEND = REWRITES["extend-autotune"]
FOLDER = FIXTURES / "extend-autotune"

HELPER_OVER_LINES = """import torch
import triton
import triton.language as tl


def autotune_configs(configs):
    return configs


@triton.autotune(
    configs=autotune_configs([
        triton.Config({"BLOCK_N": 32}),
        triton.Config({"BLOCK_N": 64}),
    ]),
    key=["ncols"],
)
@triton.jit
def _gate_fwd(X, OUT, stride, ncols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(X + row * stride + cols, mask=cols < ncols, other=0.0)
    tl.store(OUT + row * ncols + cols, x * tl.sigmoid(x), mask=cols < ncols)


def gate(x):
    out = torch.empty_like(x)
    M, N = x.shape
    _gate_fwd[lambda META: (M, triton.cdiv(N, META["BLOCK_N"]))](x, out, x.stride(0), N)
    return out
"""


def test_the_search_starts_from_the_authors_configs_alone_and_skips_what_they_try():
    ctx = context(FOLDER)
    plan = EXTEND.check(ctx).plan
    space = EXTEND.search_space(ctx, plan)
    assert space[0] == {}, "the baseline: the source as it is"
    assert {"BLOCK_SIZE": 1024, "num_warps": 4} in space[1:]
    after = context(FOLDER, "after.py")
    assert {"BLOCK_SIZE": 1024, "num_warps": 4} not in EXTEND.search_space(after, EXTEND.check(after).plan)


def test_the_chosen_configs_go_first_best_first():
    """The CPU check runs the first config (nothing there is timed): the best new one."""
    chosen = [{"BLOCK_SIZE": 4096, "num_warps": 8}, {"BLOCK_SIZE": 2048, "num_warps": 8}]
    out = EXTEND.apply(context(FOLDER).with_params({"configs": chosen}))
    configs = out[out.index("configs=[") : out.index("key=")]
    order = [configs.index(f'"BLOCK_SIZE": {b}}}') for b in (4096, 2048, 256, 512)]
    assert order == sorted(order), configs


def test_a_helper_call_written_over_lines_is_spread_one_config_a_line():
    """mamba's `autotune_configs([...])` over several lines: the new configs and `*` the helper's list,
    each on its own line, the helper's own lines moved in with it."""
    ctx = RewriteContext(HELPER_OVER_LINES, "gate.py")
    assert EXTEND.check(ctx).holds
    out = EXTEND.apply(ctx.with_params({"configs": [{"BLOCK_N": 2048, "num_warps": 8}]}))
    assert (
        "    configs=[\n"
        '        triton.Config({"BLOCK_N": 2048}, num_warps=8),\n'
        "        *autotune_configs([\n"
        '            triton.Config({"BLOCK_N": 32}),\n'
    ) in out
    assert "        ]),\n    ],\n    key=" in out


def test_no_search_and_configs_already_in_the_space_leave_the_source_alone():
    with pytest.raises(NotApplicable, match="already try BLOCK_SIZE=1024, num_warps=4"):
        EXTEND.apply(context(FOLDER, "after.py"))
