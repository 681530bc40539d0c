"""The central code table: every rule, by its stable code. Grep-able and reviewed in one place;
nothing registers itself at import time. `TRI` codes apply to GPUs (and often Ascend), `ASC` codes
to Ascend only; each rule's `targets` says which families it runs for.
"""

from __future__ import annotations

from typing import Iterable

from diagnose.errors import UsageError
from diagnose.triage.rule import Rule
from diagnose.triage.rules.autotune_empty_key import AutotuneEmptyKey
from diagnose.triage.rules.block_size_not_constexpr import BlockSizeNotConstexpr
from diagnose.triage.rules.branch_in_hot_loop import BranchInHotLoop
from diagnose.triage.rules.contiguous_copy_in_forward import ContiguousCopyInForward
from diagnose.triage.rules.cube_tile_not_multiple_of_16 import CubeTileNotMultipleOf16
from diagnose.triage.rules.cube_tile_overflows_l0 import CubeTileOverflowsL0
from diagnose.triage.rules.device_synchronize_in_forward import DeviceSynchronizeInForward
from diagnose.triage.rules.div_mod_index import DivModIndex
from diagnose.triage.rules.dot_below_wgmma_minimum import DotBelowWgmmaMinimum
from diagnose.triage.rules.dot_dimension_below_16 import DotDimensionBelow16
from diagnose.triage.rules.dot_tiles_overflow_shared_memory import DotTilesOverflowSharedMemory
from diagnose.triage.rules.file_does_not_parse import FileDoesNotParse
from diagnose.triage.rules.grid_axis_over_limit import GridAxisOverLimit
from diagnose.triage.rules.grid_exceeds_core_count import GridExceedsCoreCount
from diagnose.triage.rules.grid_over_65535 import GridOver65535
from diagnose.triage.rules.host_epilogue_after_launch import HostEpilogueAfterLaunch
from diagnose.triage.rules.host_sync_in_forward import HostSyncInForward
from diagnose.triage.rules.host_tensor_in_forward import HostTensorInForward
from diagnose.triage.rules.huge_static_range import HugeStaticRange
from diagnose.triage.rules.ieee_fp32_dot import IeeeFp32Dot
from diagnose.triage.rules.indirect_gather_load import IndirectGatherLoad
from diagnose.triage.rules.int64_index_arithmetic import Int64IndexArithmetic
from diagnose.triage.rules.launch_in_python_loop import LaunchInPythonLoop
from diagnose.triage.rules.loop_invariant_load import LoopInvariantLoad
from diagnose.triage.rules.low_precision_accumulator import LowPrecisionAccumulator
from diagnose.triage.rules.matmul_without_group_swizzle import MatmulWithoutGroupSwizzle
from diagnose.triage.rules.more_warps_than_elements import MoreWarpsThanElements
from diagnose.triage.rules.multi_pass_row_reload import MultiPassRowReload
from diagnose.triage.rules.multiple_of_on_raw_argument import MultipleOfOnRawArgument
from diagnose.triage.rules.non_power_of_two_arange import NonPowerOfTwoArange
from diagnose.triage.rules.per_iteration_reduction import PerIterationReduction
from diagnose.triage.rules.pointer_subscript import PointerSubscript
from diagnose.triage.rules.reduction_as_elementwise import ReductionAsElementwise
from diagnose.triage.rules.runtime_stride_on_contiguous_axis import RuntimeStrideOnContiguousAxis
from diagnose.triage.rules.scalar_kernel_without_block import ScalarKernelWithoutBlock
from diagnose.triage.rules.scalar_loop_reduction import ScalarLoopReduction
from diagnose.triage.rules.single_address_atomic import SingleAddressAtomic
from diagnose.triage.rules.single_pass_without_multibuffer import SinglePassWithoutMultibuffer
from diagnose.triage.rules.single_program_grid import SingleProgramGrid
from diagnose.triage.rules.strided_reduction_axis import StridedReductionAxis
from diagnose.triage.rules.too_few_elements_per_thread import TooFewElementsPerThread
from diagnose.triage.rules.ub_overflow import UbOverflow
from diagnose.triage.rules.unaligned_tail_axis import UnalignedTailAxis
from diagnose.triage.rules.unfused_elementwise_launches import UnfusedElementwiseLaunches
from diagnose.triage.rules.unmasked_load_past_bound import UnmaskedLoadPastBound
from diagnose.triage.rules.unpipelined_k_loop import UnpipelinedKLoop
from diagnose.triage.rules.where_after_masked_load import WhereAfterMaskedLoad
from diagnose.triage.rules.while_loop_in_kernel import WhileLoopInKernel

RULES: dict[str, type[Rule]] = {
    "TRI000": FileDoesNotParse,
    "TRI001": TooFewElementsPerThread,
    "TRI002": MultipleOfOnRawArgument,
    "TRI003": RuntimeStrideOnContiguousAxis,
    "TRI004": IeeeFp32Dot,
    "TRI005": DotBelowWgmmaMinimum,
    "TRI006": UnpipelinedKLoop,
    "TRI007": MultiPassRowReload,
    "TRI008": ScalarLoopReduction,
    "TRI009": HostSyncInForward,
    "TRI010": DeviceSynchronizeInForward,
    "TRI011": UnfusedElementwiseLaunches,
    "TRI012": LaunchInPythonLoop,
    "TRI013": ContiguousCopyInForward,
    "TRI014": SingleAddressAtomic,
    "TRI015": HugeStaticRange,
    "TRI016": NonPowerOfTwoArange,
    "TRI017": UnmaskedLoadPastBound,
    "TRI018": MoreWarpsThanElements,
    "TRI019": MatmulWithoutGroupSwizzle,
    "TRI020": GridAxisOverLimit,
    "TRI021": LowPrecisionAccumulator,
    "TRI022": DotTilesOverflowSharedMemory,
    "TRI023": DotDimensionBelow16,
    "TRI024": AutotuneEmptyKey,
    "TRI025": ScalarKernelWithoutBlock,
    "TRI026": SingleProgramGrid,
    "TRI027": HostTensorInForward,
    "TRI028": BlockSizeNotConstexpr,
    "TRI029": StridedReductionAxis,
    "TRI030": HostEpilogueAfterLaunch,
    "TRI031": ReductionAsElementwise,
    "TRI032": PointerSubscript,
    "ASC001": GridOver65535,
    "ASC002": GridExceedsCoreCount,
    "ASC003": UbOverflow,
    "ASC004": UnalignedTailAxis,
    "ASC005": IndirectGatherLoad,
    "ASC006": DivModIndex,
    "ASC007": Int64IndexArithmetic,
    "ASC008": WhereAfterMaskedLoad,
    "ASC009": WhileLoopInKernel,
    "ASC010": BranchInHotLoop,
    "ASC011": CubeTileOverflowsL0,
    "ASC012": CubeTileNotMultipleOf16,
    "ASC013": SinglePassWithoutMultibuffer,
    "ASC014": PerIterationReduction,
    "ASC015": LoopInvariantLoad,
}

BY_NAME = {rule.name: code for code, rule in RULES.items()}


def select_codes(select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> list[str]:
    """Codes to run: `select` (codes, prefixes like `ASC`, rule names, or `ALL`; default all) minus
    `ignore`. An entry that matches no rule is a UsageError."""
    chosen = _expand(select) if select else list(RULES)
    dropped = set(_expand(ignore)) if ignore else set()
    return [code for code in chosen if code not in dropped]


def _expand(entries: Iterable[str]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        token = entry.strip()
        if not token:
            continue
        if token.upper() == "ALL":
            matched = list(RULES)
        elif token in BY_NAME:
            matched = [BY_NAME[token]]
        else:
            matched = [code for code in RULES if code.startswith(token.upper())]
        if not matched:
            raise UsageError(f"unknown rule code {token!r} (see `diagnose triage --help` for codes)")
        out.extend(code for code in matched if code not in out)
    return out
