"""Ascend fact extractors: one module per fact, each a function `AscendFactContext -> list[Evidence]`.

The table below is the registry, in report order; `facts_for` runs every extractor whose inputs the
compile produced. Each module's docstring is the fact's documentation: what it reads, its kinds
and arguments. Every fact is `Evidence(stage="ir", source="ttadapter" | "launch" | "npubin")` or,
for pass attribution, `Evidence(stage="pass", source="pass:<name>")`, located at the user's line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from diagnose.ascend.facts.context import AscendFactContext
from diagnose.ascend.facts.cube_matmul import cube_matmul
from diagnose.ascend.facts.indirect_access import indirect_access
from diagnose.ascend.facts.int64_arithmetic import int64_arithmetic
from diagnose.ascend.facts.kernel_mode import kernel_mode
from diagnose.ascend.facts.launch_grid import launch_grid
from diagnose.ascend.facts.masked_padding import masked_padding
from diagnose.ascend.facts.pass_origin import pass_origin
from diagnose.ascend.facts.scalarized_access import scalarized_access
from diagnose.ascend.facts.structured_access import structured_access
from diagnose.ascend.facts.ub_footprint import ub_footprint
from diagnose.records import Evidence


@dataclass(frozen=True)
class AscendFact:
    """A fact extractor and the artefacts it needs (`passes`: the IR after every pass)."""

    name: str
    func: Callable[[AscendFactContext], list[Evidence]]
    needs: tuple[str, ...]


EXTRACTORS: tuple[AscendFact, ...] = (
    AscendFact("KernelMode", kernel_mode, ("ttadapter",)),
    AscendFact("LaunchGrid", launch_grid, ("ttadapter", "grid")),
    AscendFact("ScalarizedAccess", scalarized_access, ("ttadapter",)),
    AscendFact("StructuredAccess", structured_access, ("ttadapter",)),
    AscendFact("IndirectAccess", indirect_access, ("ttadapter",)),
    AscendFact("MaskedLoadPadding", masked_padding, ("ttadapter",)),
    AscendFact("CubeMatmul", cube_matmul, ("ttadapter",)),
    AscendFact("Int64Arithmetic", int64_arithmetic, ("ttadapter",)),
    AscendFact("UBFootprint", ub_footprint, ("ttadapter",)),
    AscendFact("PassIntroduced", pass_origin, ("passes",)),
)


def facts_for(ctx: AscendFactContext) -> list[Evidence]:
    """Every fact of one compiled launch, ordered by source line (kernel-level facts first)."""
    if not ctx.text("ttadapter"):
        return []  # simt_only compiles, or a compile that stopped before ttadapter
    out: list[Evidence] = []
    for extractor in EXTRACTORS:
        out += extractor.func(ctx)
    return sorted(out, key=lambda e: (e.location.line if e.location else 0, e.location.col if e.location else 0))


__all__ = ["EXTRACTORS", "AscendFact", "AscendFactContext", "facts_for"]
