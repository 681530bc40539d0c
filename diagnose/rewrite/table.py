"""The central rewrite table: every rewrite by its id, in the order a combined candidate applies them.

Repairs come first (a kernel that does not compile, `constexpr-block-size`, `elementwise-max`,
`pointer-subscript`: every later candidate compiles it), then structural rewrites (they change what a
kernel computes per program), then program order and grids, then the tunable launch values, so that
the launch-config search compiles the final kernels. Nothing registers itself at import time. `CODE_REWRITES` is the
reverse map from finding codes to the rewrites that answer them: the triage code table's `rewrites`
ids should read from it.
"""

from __future__ import annotations

from diagnose.errors import UsageError
from diagnose.rewrite.codemods.add_autotune import AddAutotune
from diagnose.rewrite.codemods.attention_tiles import AttentionTiles
from diagnose.rewrite.codemods.block_loop_sum import BlockLoopSum
from diagnose.rewrite.codemods.block_per_program import BlockPerProgram
from diagnose.rewrite.codemods.column_tiles import ColumnTiles
from diagnose.rewrite.codemods.constexpr_block_size import ConstexprBlockSize
from diagnose.rewrite.codemods.dot_input_precision import DotInputPrecision
from diagnose.rewrite.codemods.elementwise_max import ElementwiseMax
from diagnose.rewrite.codemods.extend_autotune import ExtendAutotune
from diagnose.rewrite.codemods.fuse_elementwise import FuseElementwise
from diagnose.rewrite.codemods.fuse_host_epilogue import FuseHostEpilogue
from diagnose.rewrite.codemods.group_m_swizzle import GroupMSwizzle
from diagnose.rewrite.codemods.hoist_loop_invariant import HoistLoopInvariant
from diagnose.rewrite.codemods.int32_index import Int32Index
from diagnose.rewrite.codemods.launch_options import LaunchOptions
from diagnose.rewrite.codemods.load_other import LoadOther
from diagnose.rewrite.codemods.online_softmax import OnlineSoftmax
from diagnose.rewrite.codemods.persistent_grid import PersistentGrid
from diagnose.rewrite.codemods.pointer_subscript import PointerSubscript
from diagnose.rewrite.codemods.prefetch_next_row import PrefetchNextRow
from diagnose.rewrite.codemods.programs_per_sm import ProgramsPerSm
from diagnose.rewrite.codemods.retune_launch import RetuneLaunch
from diagnose.rewrite.codemods.row_program_order import RowProgramOrder
from diagnose.rewrite.codemods.rows_per_program import RowsPerProgram
from diagnose.rewrite.rewrite import Rewrite
from diagnose.rewrite.codemods.single_pass_row import SinglePassRow
from diagnose.rewrite.codemods.split_k import SplitK
from diagnose.rewrite.codemods.structured_2d_index import Structured2dIndex
from diagnose.rewrite.codemods.two_level_tiling import TwoLevelTiling
from diagnose.rewrite.codemods.vectorization_hints import VectorizationHints
from diagnose.rewrite.codemods.wgmma_tiles import WgmmaTiles

REWRITES: dict[str, Rewrite] = {
    rewrite.id: rewrite
    for rewrite in (
        ConstexprBlockSize(),
        ElementwiseMax(),
        PointerSubscript(),
        SinglePassRow(),
        OnlineSoftmax(),
        FuseElementwise(),
        FuseHostEpilogue(),
        Structured2dIndex(),
        ColumnTiles(),
        BlockLoopSum(),
        BlockPerProgram(),
        LoadOther(),
        HoistLoopInvariant(),
        PrefetchNextRow(),
        Int32Index(),
        GroupMSwizzle(),
        RowProgramOrder(),
        RowsPerProgram(),
        PersistentGrid(),
        ProgramsPerSm(),
        SplitK(),
        TwoLevelTiling(),
        DotInputPrecision(),
        VectorizationHints(),
        WgmmaTiles(),
        AttentionTiles(),
        RetuneLaunch(),
        AddAutotune(),
        ExtendAutotune(),
        LaunchOptions(),
    )
}


def _by_code() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for rewrite in REWRITES.values():
        for code in rewrite.codes:
            out.setdefault(code, []).append(rewrite.id)
    return {code: tuple(ids) for code, ids in sorted(out.items())}


CODE_REWRITES: dict[str, tuple[str, ...]] = _by_code()


def rewrites_for(code: str) -> tuple[str, ...]:
    """The rewrite ids that answer a finding code (empty when none does)."""
    return CODE_REWRITES.get(code, ())


def get(rewrite_id: str) -> Rewrite:
    try:
        return REWRITES[rewrite_id]
    except KeyError:
        raise UsageError(f"unknown rewrite {rewrite_id!r}; rewrites: {', '.join(REWRITES)}") from None
